package projections

import (
	"sync"
	"testing"
	"time"
)

// A freed commit place goes to the waiting projection with the most
// events waiting for it, not to the first that asked.
func TestTurnsGoToTheFurthestBehind(t *testing.T) {
	tr := newTurns(1)
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
			tr.release()
		}()
		waitFor(i + 1)
	}
	tr.release()
	order := []int{<-got, <-got, <-got}
	wg.Wait()
	if order[0] != 7 || order[1] != 3 || order[2] != 1 {
		t.Fatalf("places given in backlog order %v, want [7 3 1]", order)
	}
	if tr.free != 1 || len(tr.waiting) != 0 {
		t.Fatalf("after: %d free, %d waiting", tr.free, len(tr.waiting))
	}
}
