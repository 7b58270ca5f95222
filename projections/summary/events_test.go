package summary

import (
	"fmt"
	"sync"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// testLog stands for the store's log in these tests: the events applied
// to the index of one directory, by seq. Tests build many short chains
// (each starting at seq 1), so events are renumbered as they are applied,
// as the log would number them.
type testLog struct {
	mu   sync.Mutex
	m    map[uint64]*log.Event
	last uint64
}

// add renumbers a copy of ev after the last event and keeps it.
func (l *testLog) add(ev *log.Event) *log.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	cp := *ev
	cp.Seq = l.last
	l.m[cp.Seq] = &cp
	return &cp
}

func (l *testLog) EventAt(seq uint64) (*log.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev, ok := l.m[seq]
	if !ok {
		return nil, fmt.Errorf("event %d: %w", seq, log.ErrNotFound)
	}
	return ev, nil
}

var (
	logsMu sync.Mutex
	logs   = map[string]*testLog{}
)

// logOf is the log of dir: reopening a directory keeps it, as the log
// stays when projections are reopened.
func logOf(dir string) *testLog {
	logsMu.Lock()
	defer logsMu.Unlock()
	l := logs[dir]
	if l == nil {
		l = &testLog{m: map[uint64]*log.Event{}}
		logs[dir] = l
	}
	return l
}

// logged is an Index whose Apply goes through its directory's log first
// (for projtest.Run, which applies events itself).
type logged struct{ *Index }

func (x logged) Apply(ev *log.Event) error {
	if ev != nil {
		ev = x.events.(*testLog).add(ev)
	}
	return x.Index.Apply(ev)
}

var _ projections.Projection = logged{}
