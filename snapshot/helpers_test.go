package snapshot

import (
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// testEnv is a real log (encrypted, hash-chained) with a projections and a
// snapshots directory.
type testEnv struct {
	Env
	root   string
	logDir string
	l      *log.Log
}

func newLogID(t testing.TB) [16]byte {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	return id
}

// newTestEnv opens a log in a new temp dir with a fresh keyring and
// appends the first n events of seed's generated stream.
func newTestEnv(t testing.TB, seed int64, n int) *testEnv {
	t.Helper()
	kr, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	te := &testEnv{root: root, logDir: filepath.Join(root, "log")}
	te.Env = Env{LogID: newLogID(t), Keys: kr, ProjDir: filepath.Join(root, "projections"), SnapDir: filepath.Join(root, "snapshots")}
	te.open(t)
	te.appendEvents(t, projtest.Events(seed, n))
	return te
}

func (te *testEnv) open(t testing.TB) {
	t.Helper()
	l, err := log.Open(te.logDir, log.Options{Keys: te.Keys, Durability: log.None})
	if err != nil {
		t.Fatal(err)
	}
	te.l, te.Log = l, l
	t.Cleanup(func() { l.Close() })
}

func (te *testEnv) close(t testing.TB) {
	t.Helper()
	if err := te.l.Close(); err != nil {
		t.Fatal(err)
	}
}

// appendEvents appends the bodies (with their ids and times) of evs.
func (te *testEnv) appendEvents(t testing.TB, evs []*log.Event) {
	t.Helper()
	const batch = 1000
	for i := 0; i < len(evs); i += batch {
		var es []log.Entry
		for _, ev := range evs[i:min(i+batch, len(evs))] {
			es = append(es, log.Entry{ID: ev.ID, Time: ev.Time, Body: ev.Body})
		}
		if _, err := te.l.AppendBatch(context.Background(), es); err != nil {
			t.Fatal(err)
		}
	}
}

// clone copies the closed log directory into a new env that shares the
// log id and keys (a second device that stopped syncing).
func (te *testEnv) clone(t testing.TB) *testEnv {
	t.Helper()
	root := t.TempDir()
	c := &testEnv{root: root, logDir: filepath.Join(root, "log")}
	c.Env = te.Env
	c.ProjDir, c.SnapDir = filepath.Join(root, "projections"), filepath.Join(root, "snapshots")
	copyDir(t, te.logDir, c.logDir)
	c.open(t)
	return c
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rebuildDigests builds the projections from scratch in a temp dir and
// returns their digests: the oracle every restore is compared with.
func rebuildDigests(t testing.TB, env Env) map[string]string {
	t.Helper()
	set, err := projstd.Open(filepath.Join(t.TempDir(), "p"), env.Log, env.Set)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if err := set.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	d, err := set.Projector.Digests()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// liveDigests opens the env's projections and returns their digests
// without catching up.
func liveDigests(t testing.TB, env Env) map[string]string {
	t.Helper()
	set, err := projstd.Open(env.ProjDir, env.Log, env.Set)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	d, err := set.Projector.Digests()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sameDigests(a, b map[string]string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
