package projections

import "sync"

// turns hands out the places of Options.Commits to the projections of a
// catch-up that want to commit. When more wait than there are places, a
// freed place goes to the one with the most events waiting in its
// channel: the projection that sets the pace (the slowest to apply, with
// its channel full) otherwise waited behind the others' commits while
// they, and the reader, waited for it. Which projection commits first
// changes no projection's content.
type turns struct {
	mu      sync.Mutex
	free    int
	waiting []*turnWaiter
}

type turnWaiter struct {
	backlog func() int // events (batches) waiting for the projection
	ready   chan struct{}
}

func newTurns(n int) *turns { return &turns{free: max(n, 1)} }

// acquire waits for a place; backlog reports how far behind the caller is.
func (t *turns) acquire(backlog func() int) {
	t.mu.Lock()
	if t.free > 0 {
		t.free--
		t.mu.Unlock()
		return
	}
	w := &turnWaiter{backlog: backlog, ready: make(chan struct{})}
	t.waiting = append(t.waiting, w)
	t.mu.Unlock()
	<-w.ready
}

// release gives the place back, or to the waiter furthest behind (the
// first to wait among equals).
func (t *turns) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.waiting) == 0 {
		t.free++
		return
	}
	best, most := 0, -1
	for i, w := range t.waiting {
		if b := w.backlog(); b > most {
			best, most = i, b
		}
	}
	w := t.waiting[best]
	t.waiting = append(t.waiting[:best], t.waiting[best+1:]...)
	close(w.ready)
}
