package projections

import "sync"

// turns hands out the places of Options.Commits to the projections of a
// catch-up that want to commit. When more wait than there are places, a
// freed place goes to the one with the most events waiting in its
// channel: the projection that sets the pace (the slowest to apply, with
// its channel full) otherwise waited behind the others' commits while
// they, and the reader, waited for it. Which projection commits first
// changes no projection's content.
//
// With a pacer place (Options.PacerCommit), a commit whose projection
// has pacer batches or more waiting (its channel full: the reader, and
// every other projection behind it, waits for it) does not wait for a
// place: it takes the one extra place, when that is free. At 400K events
// the commits, one at a time, held the place for the whole catch-up and
// full text, which sets the pace, waited for it a quarter of the time.
type turns struct {
	mu        sync.Mutex
	free      int
	waiting   []*turnWaiter
	pacer     int  // backlog that makes a projection the pacer; 0: no pacer place
	pacerBusy bool // the pacer place is taken
}

type turnWaiter struct {
	backlog func() int // events (batches) waiting for the projection
	ready   chan struct{}
	pacer   bool // given the pacer place (set before ready is closed)
	commit  bool // a commit: may take the pacer place
}

// newTurns returns n places, and a pacer place for backlogs of pacer
// batches or more when pacer > 0.
func newTurns(n, pacer int) *turns { return &turns{free: max(n, 1), pacer: max(pacer, 0)} }

// acquire waits for a place; backlog reports how far behind the caller
// is. It is for what is not a commit (a compaction, the end of a bulk
// build): those never take the pacer place.
func (t *turns) acquire(backlog func() int) {
	t.take(backlog, false)
}

// acquireCommit is acquire for a commit, which may take the pacer place;
// it reports whether it did (give it back with release(true)).
func (t *turns) acquireCommit(backlog func() int) (pacer bool) {
	return t.take(backlog, true)
}

func (t *turns) take(backlog func() int, commit bool) (pacer bool) {
	t.mu.Lock()
	if t.free > 0 {
		t.free--
		t.mu.Unlock()
		return false
	}
	if commit && t.pacer > 0 && !t.pacerBusy && backlog() >= t.pacer {
		t.pacerBusy = true
		t.mu.Unlock()
		return true
	}
	w := &turnWaiter{backlog: backlog, ready: make(chan struct{}), commit: commit}
	t.waiting = append(t.waiting, w)
	t.mu.Unlock()
	<-w.ready
	return w.pacer
}

// release gives the place back (pacer: the pacer place), or to the
// waiter furthest behind (the first to wait among equals); the pacer
// place goes only to a commit whose backlog makes it the pacer.
func (t *turns) release(pacer bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pacer {
		best, most := -1, t.pacer-1
		for i, w := range t.waiting {
			if b := w.backlog(); w.commit && b > most {
				best, most = i, b
			}
		}
		if best < 0 {
			t.pacerBusy = false
			return
		}
		t.hand(best, true)
		return
	}
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
	t.hand(best, false)
}

// hand gives a place to waiter i (t.mu held).
func (t *turns) hand(i int, pacer bool) {
	w := t.waiting[i]
	t.waiting = append(t.waiting[:i], t.waiting[i+1:]...)
	w.pacer = pacer
	close(w.ready)
}
