package snapshot

import (
	"os"
	"testing"

	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// A snapshot taken in the middle of a stream of edits (re-chunks with
// removes), tool calls and supersedes, restored and replayed to the head,
// gives the digests of a full rebuild.
func TestRestoreKeepsConversationModelDigests(t *testing.T) {
	evs := projtest.ConvEvents(7, 450)
	te := newTestEnv(t, 1, 0)
	te.appendEvents(t, evs[:300])
	cr, err := Create(ctx, te.Env, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	atSnap := rebuildDigests(t, te.Env)
	if !sameDigests(cr.Manifest.Digests(), atSnap) {
		t.Fatalf("manifest digests %v, rebuild %v", cr.Manifest.Digests(), atSnap)
	}
	te.appendEvents(t, evs[300:])
	if err := os.RemoveAll(te.ProjDir); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, te.Env, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq != 300 || res.Replayed != 150 {
		t.Fatalf("restore %+v", res)
	}
	want := rebuildDigests(t, te.Env)
	if sameDigests(want, atSnap) {
		t.Fatal("the delta changed no digest; the test proves nothing")
	}
	if !sameDigests(res.Digests, want) {
		t.Fatalf("restore+replay digests %v, full rebuild %v", res.Digests, want)
	}
}
