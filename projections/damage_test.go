package projections_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// panicker panics on one seq, like a library reading a damaged file.
type panicker struct {
	recorder
	at uint64
}

func (p *panicker) Apply(ev *log.Event) error {
	if ev.Seq == p.at {
		panic("invalid page type: 0")
	}
	return p.recorder.Apply(ev)
}

// TestProjectionPanicKillsCatchUp: a projection whose library panicked on
// a damaged file took the whole process down (an unrecovered panic on the
// projector's goroutine). The catch-up now returns a DamagedError naming
// it, and the other projections are committed as far as they got.
func TestProjectionPanicKillsCatchUp(t *testing.T) {
	evs := projtest.Events(1, 300)
	bad := &panicker{recorder: recorder{name: "bad"}, at: 120}
	good := &recorder{name: "good"}
	pr, err := projections.NewProjector(projtest.NewMemSource(evs), []projections.Projection{good, bad}, projections.Options{CommitEvery: 50})
	if err != nil {
		t.Fatal(err)
	}
	err = pr.CatchUp(context.Background(), nil)
	if name, ok := projections.Damaged(err); !ok || name != "bad" || !errors.Is(err, projections.ErrDamaged) {
		t.Fatalf("catch up: %v, want a DamagedError for bad", err)
	}
	if len(good.applied) == 0 || good.cp.Seq == 0 {
		t.Fatalf("good projection: applied %d, checkpoint %d", len(good.applied), good.cp.Seq)
	}
}

// TestGuardTurnsSIGBUSIntoError: reading a mapped file past its end (what
// bbolt does on a file truncated under it) raised SIGBUS and killed the
// process; under Guard it is a DamagedError.
func TestGuardTurnsSIGBUSIntoError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<16), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 1<<16, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(m)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var sink byte
	err = projections.Guard("t", func() error {
		sink = m[1<<15]
		return nil
	})
	if name, ok := projections.Damaged(err); !ok || name != "t" {
		t.Fatalf("guard: %v (read %d)", err, sink)
	}
}
