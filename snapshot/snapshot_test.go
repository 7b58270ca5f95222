package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

var ctx = context.Background()

func TestRestorePlusReplayEqualsRebuild(t *testing.T) {
	te := newTestEnv(t, 1, 300)
	cr, err := Create(ctx, te.Env, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := cr.Manifest
	if m.Seq != 300 || len(m.Projections) != len(projstd.Names) {
		t.Fatalf("manifest seq %d, %d projections", m.Seq, len(m.Projections))
	}
	atSnap := rebuildDigests(t, te.Env)
	if !sameDigests(m.Digests(), atSnap) {
		t.Fatalf("manifest digests %v, rebuild at 300 %v", m.Digests(), atSnap)
	}
	// More events, including tombstones, after the snapshot.
	te.appendEvents(t, projtest.Events(2, 150))
	// Wreck the live projections: restore must not depend on them.
	if err := os.RemoveAll(te.ProjDir); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, te.Env, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FellBack || res.Snapshot != m.Name || res.Seq != 300 || res.Replayed != 150 || res.Head != 450 {
		t.Fatalf("restore result %+v", res)
	}
	want := rebuildDigests(t, te.Env)
	if sameDigests(want, atSnap) {
		t.Fatal("the delta did not change any digest; the test proves nothing")
	}
	if !sameDigests(res.Digests, want) {
		t.Fatalf("restore+replay digests %v, full rebuild %v", res.Digests, want)
	}
	if got := liveDigests(t, te.Env); !sameDigests(got, want) {
		t.Fatalf("reopened digests %v, want %v", got, want)
	}
	// No temp or old directories are left next to the projections.
	ents, _ := os.ReadDir(te.root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".projections-") || strings.Contains(e.Name(), ".old-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// refusalFixture is one store with snapshots at 220 and 300, a clone of its
// log at 200 that went on with other events (head 250), and another store.
type refusalFixture struct {
	a, b, other *testEnv
	s220, s300  Info
	otherSnap   Info
}

func newRefusalFixture(t *testing.T) *refusalFixture {
	f := &refusalFixture{}
	f.a = newTestEnv(t, 1, 200)
	f.a.close(t)
	f.b = f.a.clone(t)
	f.a.open(t)
	f.a.appendEvents(t, projtest.Events(3, 20))
	keepAll := CreateOptions{Keep: -1}
	r220, err := Create(ctx, f.a.Env, keepAll)
	if err != nil {
		t.Fatal(err)
	}
	f.a.appendEvents(t, projtest.Events(4, 80))
	r300, err := Create(ctx, f.a.Env, keepAll)
	if err != nil {
		t.Fatal(err)
	}
	f.s220 = Info{Name: r220.Manifest.Name, Dir: r220.Dir, Manifest: r220.Manifest}
	f.s300 = Info{Name: r300.Manifest.Name, Dir: r300.Dir, Manifest: r300.Manifest}
	f.b.appendEvents(t, projtest.Events(5, 50))
	f.other = newTestEnv(t, 6, 60)
	ro, err := Create(ctx, f.other.Env, keepAll)
	if err != nil {
		t.Fatal(err)
	}
	f.otherSnap = Info{Name: ro.Manifest.Name, Dir: ro.Dir, Manifest: ro.Manifest}
	return f
}

// install copies a snapshot into a fresh snapshots dir and returns an Env
// of base using it.
func install(t *testing.T, base Env, s Info) (Env, string) {
	env := base
	env.SnapDir = filepath.Join(t.TempDir(), "snapshots")
	dst := filepath.Join(env.SnapDir, s.Name)
	copyDir(t, s.Dir, dst)
	return env, dst
}

func editManifest(t *testing.T, dir string, edit func(m *Manifest)) {
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// rehash makes the manifest's archive size and hash match the (tampered)
// archive, so the frame authentication is what must catch it.
func rehash(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, ArchiveFile))
	if err != nil {
		t.Fatal(err)
	}
	editManifest(t, dir, func(m *Manifest) {
		m.Archive.Size = int64(len(b))
		m.Archive.SHA256 = sha256Hex(b)
	})
}

func flipByte(t *testing.T, path string, at func(size int) int) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at(len(b))] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRefusedSnapshotsFallBack(t *testing.T) {
	f := newRefusalFixture(t)
	otherKeys, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		target *testEnv
		snap   func() Info
		tamper func(t *testing.T, env *Env, dir string)
		want   error
	}{
		{"flipped byte in archive", f.a, func() Info { return f.s300 }, func(t *testing.T, _ *Env, dir string) {
			flipByte(t, filepath.Join(dir, ArchiveFile), func(n int) int { return n / 2 })
		}, ErrCorrupt},
		{"flipped byte, manifest hash updated", f.a, func() Info { return f.s300 }, func(t *testing.T, _ *Env, dir string) {
			flipByte(t, filepath.Join(dir, ArchiveFile), func(n int) int { return n / 3 })
			rehash(t, dir)
		}, ErrCorrupt},
		{"last frame cut off, manifest hash updated", f.a, func() Info { return f.s300 }, func(t *testing.T, _ *Env, dir string) {
			p := filepath.Join(dir, ArchiveFile)
			b, _ := os.ReadFile(p)
			m, _ := ReadManifest(dir)
			// Frames of the default size: keep the header and whole inner frames only.
			keep := len(archiveMagic) + 4 + (len(b)-len(archiveMagic)-4)/(m.Archive.FrameSize+20)*(m.Archive.FrameSize+20)
			if keep == len(b) || keep <= len(archiveMagic)+4 {
				keep = len(b) - 7
			}
			os.WriteFile(p, b[:keep], 0o600)
			rehash(t, dir)
		}, ErrCorrupt},
		{"digest edited in manifest", f.a, func() Info { return f.s300 }, func(t *testing.T, _ *Env, dir string) {
			editManifest(t, dir, func(m *Manifest) { m.Projections[0].Digest = strings.Repeat("ab", 32) })
		}, ErrCorrupt},
		{"manifest garbled", f.a, func() Info { return f.s300 }, func(t *testing.T, _ *Env, dir string) {
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"format":1,"name":`), 0o600)
		}, ErrCorrupt},
		{"snapshot of another store", f.a, func() Info { return f.otherSnap }, nil, ErrForeign},
		{"snapshot ahead of the log", f.b, func() Info { return f.s300 }, nil, ErrAhead},
		{"snapshot of a diverged chain", f.b, func() Info { return f.s220 }, nil, ErrDiverged},
		{"another vault key", f.a, func() Info { return f.s300 }, func(t *testing.T, env *Env, _ string) { env.Keys = otherKeys }, ErrKey},
		{"another projection set (refused after the swap: rolled back)", f.a, func() Info { return f.s300 }, func(t *testing.T, env *Env, _ string) {
			env.Set.Only = []string{"timelines", "fts"}
		}, ErrIncompatible},
		{"another embedder (refused before extracting)", f.a, func() Info { return f.s300 }, func(t *testing.T, env *Env, _ string) {
			e, err := vector.NewHashEmbedder(128)
			if err != nil {
				t.Fatal(err)
			}
			env.Set.Vectors.Embedder = e
		}, ErrEmbedder},
		{"format from the future", f.a, func() Info { return f.s300 }, func(t *testing.T, _ *Env, dir string) {
			editManifest(t, dir, func(m *Manifest) { m.Format = 99 })
		}, ErrIncompatible},
	}
	// The digests a fallback must equal are a fresh rebuild's, which
	// depend only on the log and the set's options (and the keys): the
	// cases that leave them as their target's share one rebuild (9 of the
	// 12 cases, 2 rebuilds instead of 9). No case writes to a log.
	rebuilt := map[string]map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, dir := install(t, tc.target.Env, tc.snap())
			if tc.tamper != nil {
				tc.tamper(t, &env, dir)
			}
			key := fmt.Sprintf("%p|%p|%p|%+v", tc.target, env.Log, env.Keys, env.Set)
			want, ok := rebuilt[key]
			if !ok {
				want = rebuildDigests(t, env)
				rebuilt[key] = want
			}
			before := liveDigests(t, env)

			_, err := Restore(ctx, env, RestoreOptions{Name: filepath.Base(dir)})
			if !errors.Is(err, tc.want) {
				t.Fatalf("restore without fallback: %v, want %v", err, tc.want)
			}
			if got := liveDigests(t, env); !sameDigests(got, before) && len(before) > 0 {
				t.Fatalf("a refused restore changed the projections: %v -> %v", before, got)
			}
			res, err := Restore(ctx, env, RestoreOptions{Fallback: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.FellBack || len(res.Refused) != 1 || !errors.Is(res.Refused[0].Err, tc.want) {
				t.Fatalf("fallback result %+v", res)
			}
			t.Logf("refused: %s", res.Refused[0].Reason)
			if !sameDigests(res.Digests, want) {
				t.Fatalf("fallback digests %v, rebuild %v", res.Digests, want)
			}
		})
	}
}

func TestRestoreTriesOlderSnapshot(t *testing.T) {
	te := newTestEnv(t, 7, 120)
	old, err := Create(ctx, te.Env, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	te.appendEvents(t, projtest.Events(8, 30))
	newest, err := Create(ctx, te.Env, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(newest.Dir, ArchiveFile), func(n int) int { return n - 1 })
	res, err := Restore(ctx, te.Env, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FellBack || res.Snapshot != old.Manifest.Name || res.Replayed != 30 ||
		len(res.Refused) != 1 || res.Refused[0].Name != newest.Manifest.Name || !errors.Is(res.Refused[0].Err, ErrCorrupt) {
		t.Fatalf("result %+v", res)
	}
	if want := rebuildDigests(t, te.Env); !sameDigests(res.Digests, want) {
		t.Fatalf("digests %v, rebuild %v", res.Digests, want)
	}
}

func TestNoSnapshot(t *testing.T) {
	te := newTestEnv(t, 9, 40)
	if _, err := Restore(ctx, te.Env, RestoreOptions{}); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("restore with no snapshots: %v", err)
	}
	if _, err := Restore(ctx, te.Env, RestoreOptions{Name: "s000000000001-nope"}); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("restore of a missing name: %v", err)
	}
	res, err := Restore(ctx, te.Env, RestoreOptions{Fallback: true})
	if err != nil || !res.FellBack || !errors.Is(res.Refused[0].Err, ErrNoSnapshot) {
		t.Fatalf("fallback: %+v, %v", res, err)
	}
}

func TestRetention(t *testing.T) {
	te := newTestEnv(t, 10, 30)
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var names []string
	for i := range 5 {
		now := base.Add(time.Duration(i) * time.Minute)
		keep := 3
		if i == 3 {
			keep = -1 // keep all: nothing removed this time
		}
		r, err := Create(ctx, te.Env, CreateOptions{Keep: keep, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, r.Manifest.Name)
		switch i {
		case 3:
			if len(r.Removed) != 0 {
				t.Fatalf("keep -1 removed %v", r.Removed)
			}
		case 4:
			// 5 present before pruning to 3: the two oldest go, oldest first.
			if len(r.Removed) != 2 || r.Removed[0] != names[0] || r.Removed[1] != names[1] {
				t.Fatalf("removed %v, want %v", r.Removed, names[:2])
			}
		}
	}
	l, err := List(te.SnapDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range l {
		got = append(got, in.Name)
	}
	want := []string{names[4], names[3], names[2]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("left %v, want %v", got, want)
	}
	ents, _ := os.ReadDir(te.SnapDir)
	if len(ents) != 3 {
		t.Fatalf("snapshots dir holds %d entries", len(ents))
	}
}

func TestVerify(t *testing.T) {
	te := newTestEnv(t, 11, 80)
	r, err := Create(ctx, te.Env, CreateOptions{FrameSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	full := VerifyOptions{Keys: te.Keys, Log: te.Log, LogID: te.LogID}
	_, checks, err := Verify(ctx, r.Dir, full)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.OK {
			t.Fatalf("check %+v", c)
		}
	}
	_, checks, err = Verify(ctx, r.Dir, VerifyOptions{})
	if err != nil || !checks[len(checks)-1].Skipped {
		t.Fatalf("keyless verify: %v %+v", err, checks)
	}
	env, dir := install(t, te.Env, Info{Name: r.Manifest.Name, Dir: r.Dir})
	_ = env
	flipByte(t, filepath.Join(dir, ArchiveFile), func(n int) int { return n / 2 })
	if _, _, err := Verify(ctx, dir, VerifyOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("verify of a flipped byte without keys: %v", err)
	}
	rehash(t, dir)
	if _, _, err := Verify(ctx, dir, VerifyOptions{}); err != nil {
		t.Fatalf("keyless verify cannot see a rehashed flip, got %v", err)
	}
	if _, checks, err := Verify(ctx, dir, full); !errors.Is(err, ErrCorrupt) || checks[len(checks)-1].Name != "decrypt" {
		t.Fatalf("verify with keys of a rehashed flip: %v %+v", err, checks)
	}
	var other [16]byte
	if _, _, err := Verify(ctx, r.Dir, VerifyOptions{Log: te.Log, LogID: other}); !errors.Is(err, ErrForeign) {
		t.Fatalf("verify against another log id: %v", err)
	}
}

func TestImportAndDecodePublished(t *testing.T) {
	te := newTestEnv(t, 12, 50)
	r, err := Create(ctx, te.Env, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := os.ReadFile(filepath.Join(r.Dir, ManifestFile))
	ab, _ := os.ReadFile(filepath.Join(r.Dir, ArchiveFile))
	blob := EncodePublished(mb, ab)
	m2, a2, err := DecodePublished(blob)
	if err != nil || string(m2) != string(mb) || string(a2) != string(ab) {
		t.Fatalf("decode published: %v", err)
	}
	env := te.Env
	env.SnapDir = filepath.Join(t.TempDir(), "snaps")
	bad := append([]byte(nil), ab...)
	bad[len(bad)/2] ^= 1
	if _, err := Import(env.SnapDir, mb, bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("import of a corrupt archive: %v", err)
	}
	in, err := Import(env.SnapDir, mb, ab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(env.SnapDir, mb, ab); err != nil {
		t.Fatalf("re-import: %v", err)
	}
	te.appendEvents(t, projtest.Events(13, 10))
	res, err := Restore(ctx, env, RestoreOptions{Name: in.Name})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed != 10 || !sameDigests(res.Digests, rebuildDigests(t, te.Env)) {
		t.Fatalf("restore of an import: %+v", res)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
