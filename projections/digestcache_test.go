package projections_test

import (
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// digestCounter counts Digest calls; key is its DigestKey.
type digestCounter struct {
	*recorder
	digests int
	key     string
}

func (d *digestCounter) Digest() ([32]byte, error) {
	d.digests++
	return d.recorder.Digest()
}

func (d *digestCounter) DigestKey() string { return d.key }

// TestStatusCachedDigests: StatusCached computes a digest once per state
// (checkpoint, version, digest key) and reads it from the cache file after
// that, in this projector and the next one; a commit, a rebuild or another
// digest key computes it again; Status always computes.
func TestStatusCachedDigests(t *testing.T) {
	evs := projtest.Events(9, 500)
	cache := filepath.Join(t.TempDir(), "digests.json")
	p := &digestCounter{recorder: &recorder{name: "rec"}, key: "e1"}
	status := func(pr *projections.Projector, wantCalls int) string {
		t.Helper()
		p.digests = 0
		st, err := pr.StatusCached()
		if err != nil {
			t.Fatal(err)
		}
		if p.digests != wantCalls {
			t.Fatalf("StatusCached computed %d digests, want %d", p.digests, wantCalls)
		}
		d := digestOf(t, p.recorder)
		if st[0].Digest != fmtHex(d) {
			t.Fatalf("StatusCached digest %s, the state's %x", st[0].Digest, d)
		}
		return st[0].Digest
	}
	src := projtest.NewMemSource(evs[:400])
	pr := newProjector(t, src, projections.Options{DigestCache: cache}, p)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	status(pr, 1)
	status(pr, 0)
	// The next process (a new projector on the same file).
	pr = newProjector(t, src, projections.Options{DigestCache: cache}, p)
	status(pr, 0)
	if _, err := pr.Status(); err != nil || p.digests != 1 {
		t.Fatalf("Status computed %d digests (%v), want 1", p.digests, err)
	}
	// New events: the checkpoint moved.
	pr = newProjector(t, projtest.NewMemSource(evs), projections.Options{DigestCache: cache}, p)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	status(pr, 1)
	status(pr, 0)
	// A rebuild returns to the same checkpoint: digested afresh.
	if err := pr.Rebuild(t.Context(), []string{"rec"}, nil); err != nil {
		t.Fatal(err)
	}
	status(pr, 1)
	// Another digest key (the vector projection's embedder).
	p.key = "e2"
	status(pr, 1)
	status(pr, 0)
}

func fmtHex(d [32]byte) string {
	const hexdig = "0123456789abcdef"
	b := make([]byte, 64)
	for i, c := range d {
		b[2*i], b[2*i+1] = hexdig[c>>4], hexdig[c&15]
	}
	return string(b)
}

// TestReplaceDropsCachedDigest: a projection put in place of another (the
// set's reset of a damaged one) does not inherit the old one's cached
// digest, even at the same checkpoint.
func TestReplaceDropsCachedDigest(t *testing.T) {
	evs := projtest.Events(9, 50)
	cache := filepath.Join(t.TempDir(), "digests.json")
	old := &digestCounter{recorder: &recorder{name: "rec"}}
	pr := newProjector(t, projtest.NewMemSource(evs), projections.Options{DigestCache: cache}, old)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.StatusCached(); err != nil {
		t.Fatal(err)
	}
	// Same checkpoint, different state (as a damaged projection's would be).
	repl := &digestCounter{recorder: &recorder{name: "rec", stored: old.stored, cp: old.cp, state: [32]byte{1}}}
	if err := pr.Replace(repl); err != nil {
		t.Fatal(err)
	}
	st, err := pr.StatusCached()
	if err != nil {
		t.Fatal(err)
	}
	if repl.digests != 1 || st[0].Digest != fmtHex(repl.state) {
		t.Fatalf("after Replace: %d digests computed, status %s, want the replacement's %x", repl.digests, st[0].Digest, repl.state)
	}
}

// TestStatusQuickComputesNoDigest: StatusQuick never computes a digest; it
// reports one only when Digests (or StatusCached) computed it for the
// current state, and none once the checkpoint moves.
func TestStatusQuickComputesNoDigest(t *testing.T) {
	evs := projtest.Events(11, 300)
	cache := filepath.Join(t.TempDir(), "digests.json")
	p := &digestCounter{recorder: &recorder{name: "rec"}, key: "e1"}
	quick := func(pr *projections.Projector) string {
		t.Helper()
		p.digests = 0
		st, err := pr.StatusQuick()
		if err != nil {
			t.Fatal(err)
		}
		if p.digests != 0 {
			t.Fatalf("StatusQuick computed %d digests", p.digests)
		}
		return st[0].Digest
	}
	pr := newProjector(t, projtest.NewMemSource(evs[:200]), projections.Options{DigestCache: cache}, p)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if d := quick(pr); d != "" {
		t.Fatalf("StatusQuick reported digest %s nobody computed", d)
	}
	ds, err := pr.Digests()
	if err != nil {
		t.Fatal(err)
	}
	if d := quick(pr); d == "" || d != ds["rec"] {
		t.Fatalf("StatusQuick digest %q after Digests gave %s", d, ds["rec"])
	}
	// The next process reads it from the file.
	pr = newProjector(t, projtest.NewMemSource(evs[:200]), projections.Options{DigestCache: cache}, p)
	if d := quick(pr); d != ds["rec"] {
		t.Fatalf("StatusQuick digest %q in the next projector, want %s", d, ds["rec"])
	}
	// New events move the checkpoint: the cached digest is not this state's.
	pr = newProjector(t, projtest.NewMemSource(evs), projections.Options{DigestCache: cache}, p)
	if err := pr.CatchUp(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if d := quick(pr); d != "" {
		t.Fatalf("StatusQuick reported digest %s of an older state", d)
	}
}
