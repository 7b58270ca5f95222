package projections

import (
	"sync"
	"testing"
	"time"
)

// A freed commit place goes to the waiting projection with the most
// events waiting for it, not to the first that asked.
func TestTurnsGoToTheFurthestBehind(t *testing.T) {
	tr := newTurns(1, 0)
	tr.acquire(func() int { return 0 })
	got := make(chan int, 3)
	waitFor := func(n int) {
		for {
			tr.mu.Lock()
			k := len(tr.waiting)
			tr.mu.Unlock()
			if k == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	for i, backlog := range []int{1, 7, 3} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr.acquire(func() int { return backlog })
			got <- backlog
			tr.release(false)
		}()
		waitFor(i + 1)
	}
	tr.release(false)
	order := []int{<-got, <-got, <-got}
	wg.Wait()
	if order[0] != 7 || order[1] != 3 || order[2] != 1 {
		t.Fatalf("places given in backlog order %v, want [7 3 1]", order)
	}
	if tr.free != 1 || len(tr.waiting) != 0 {
		t.Fatalf("after: %d free, %d waiting", tr.free, len(tr.waiting))
	}
}

// A commit whose projection sets the pace (its backlog at the pacer
// mark) takes the pacer place instead of waiting for the one place; one
// short of the mark, or a compaction, waits; a second pacer waits for
// the pacer place, which goes back to it when freed.
func TestTurnsPacerCommitsBesideTheTurn(t *testing.T) {
	tr := newTurns(1, 5)
	tr.acquire(func() int { return 0 })
	if !tr.acquireCommit(func() int { return 5 }) {
		t.Fatal("the pacer did not get the pacer place")
	}
	// Everything else now waits.
	got := make(chan string, 3)
	waitFor := func(n int) {
		for {
			tr.mu.Lock()
			k := len(tr.waiting)
			tr.mu.Unlock()
			if k == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	for i, c := range []struct {
		name    string
		backlog int
		commit  bool
	}{{"short", 4, true}, {"compaction", 9, false}, {"pacer2", 6, true}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.commit {
				p := tr.acquireCommit(func() int { return c.backlog })
				got <- c.name
				tr.release(p)
				return
			}
			tr.acquire(func() int { return c.backlog })
			got <- c.name
			tr.release(false)
		}()
		waitFor(i + 1)
	}
	tr.release(true) // the pacer place: to pacer2, the one pacer waiting
	if g := <-got; g != "pacer2" {
		t.Fatalf("the freed pacer place went to %s", g)
	}
	tr.release(false)
	order := []string{<-got, <-got}
	wg.Wait()
	if order[0] != "compaction" || order[1] != "short" {
		t.Fatalf("then %v, want [compaction short]", order)
	}
	if tr.free != 1 || tr.pacerBusy || len(tr.waiting) != 0 {
		t.Fatalf("after: %d free, pacer busy %v, %d waiting", tr.free, tr.pacerBusy, len(tr.waiting))
	}
}
