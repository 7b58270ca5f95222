package log

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A request of pipelineMin entries or more is prepared on a goroutine of
// its own while the commit seals what is prepared. An invalid entry late
// in it must still fail the request whole (nothing of it written), and
// the requests committed with it (group commit) must not notice.
func TestPipelinedRequestFailsWhole(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{Durability: Group})
	const rounds = 8
	var mu sync.Mutex
	want := map[ID]string{}
	var wg sync.WaitGroup
	errc := make(chan error, 3*rounds)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				n := []int{300, pipelineMin, 40}[w]
				es := make([]Entry, n)
				for i := range es {
					es[i] = Entry{Body: &Store{Kind: KindConversation, Session: "s", Role: "user", Content: fmt.Sprintf("w%d r%d e%d", w, r, i)}}
				}
				bad := w == 0 && r%2 == 0
				if bad {
					es[249] = Entry{Body: &Store{Kind: KindConversation, Content: " "}} // empty content
				}
				res, err := l.AppendBatch(ctx, es)
				switch {
				case bad && (!errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "event 250 of 300")):
					errc <- fmt.Errorf("invalid entry 250 of 300: %v", err)
				case !bad && err != nil:
					errc <- err
				case !bad:
					mu.Lock()
					for i, x := range res {
						want[x.ID] = es[i].Body.(*Store).Content
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	n := 0
	if err := l.Events(ctx, 0, 0, func(e *Event) error {
		if c, ok := want[e.ID]; !ok || e.Store().Content != c {
			return fmt.Errorf("seq %d: content %q, appended %q", e.Seq, e.Store().Content, c)
		}
		n++
		return nil
	}); err != nil || n != len(want) {
		t.Fatalf("%d of %d events: %v", n, len(want), err)
	}
	l.Close()
	if _, err := VerifyDir(ctx, dir, kr, nil); err != nil {
		t.Fatal(err)
	}
}

// A pipelined request that its commit fails before reaching it (the log
// refuses appends after a replication failure) returns, and its
// preparing goroutine stops, without the memory being reused under it.
func TestPipelinedRequestOfFailedLog(t *testing.T) {
	kr := testKeys(t)
	refuse := errors.New("replica down")
	l := openT(t, t.TempDir(), kr, Options{Durability: Group, Replicate: func(uint64, [][]byte) error { return refuse }})
	defer l.Close()
	if _, err := l.Append(ctx, storeEntry(1)); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("append with a refusing hook: %v", err)
	}
	es := make([]Entry, 2*pipelineMin)
	for i := range es {
		es[i] = storeEntry(i)
	}
	for r := 0; r < 3; r++ {
		if _, err := l.AppendBatch(ctx, es); !errors.Is(err, ErrNotReplicated) {
			t.Fatalf("batch %d after the refusal: %v, want ErrNotReplicated", r, err)
		}
	}
}

// A commit builds its batch while the one before is written and fsynced
// (two stages, chainMu and commitMu). When that write fails, the batch
// built on it is refused whole with ErrNotWritten (its events chain to
// events that are not in the log), nothing of either is written, and
// the log goes on from its head.
func TestBatchBuiltDuringFailedWrite(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{Durability: Group})
	appendN(t, l, 5)
	entered := make(chan struct{})
	var calls int
	l.write = func(ps []pending) error {
		calls++
		if calls > 1 {
			return l.writeWAL(ps)
		}
		close(entered)
		// Fail once the next batch is built on this one: it published
		// where it leaves the chain.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			l.mu.RLock()
			next := l.flight != nil && l.flight.seq > ps[len(ps)-1].seq
			l.mu.RUnlock()
			if next {
				return syscall.ENOSPC
			}
			if time.Now().After(deadline) {
				return errors.New("the next batch was not built while this one was written")
			}
		}
	}
	errA := make(chan error, 1)
	go func() {
		_, err := l.AppendBatch(ctx, []Entry{storeEntry(10), storeEntry(11)})
		errA <- err
	}()
	<-entered
	_, errB := l.AppendBatch(ctx, []Entry{storeEntry(12), storeEntry(13), storeEntry(14)})
	if err := <-errA; !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "nothing of it was written") {
		t.Fatalf("the failed write: %v", err)
	}
	if !errors.Is(errB, ErrNotWritten) {
		t.Fatalf("the batch built on the failed one: %v, want ErrNotWritten", errB)
	}
	if head, _ := l.Head(); head != 5 {
		t.Fatalf("head %d, want 5", head)
	}
	r, err := l.Append(ctx, storeEntry(15))
	if err != nil || r.Seq != 6 {
		t.Fatalf("append after the failure: %+v %v", r, err)
	}
	l.Close()
	if n, err := VerifyDirUnlocked(dir, kr); err != nil || n != 6 {
		t.Fatalf("verify: %d events, %v", n, err)
	}
}

// Close while appends are in flight: every append either returns an
// error (ErrClosed) or was written before Close returned; nothing is
// written after (a leader woken while the batch before it was written
// must not reopen the files of a closed log).
func TestCloseDuringAppends(t *testing.T) {
	for round := 0; round < 10; round++ {
		dir := t.TempDir()
		kr := testKeys(t)
		l := openT(t, dir, kr, Options{Durability: Group})
		var wg sync.WaitGroup
		var mu sync.Mutex
		acked := 0
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					rs, err := l.AppendBatch(ctx, []Entry{storeEntry(i), storeEntry(i + 1)})
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Error(err)
						}
						return
					}
					mu.Lock()
					acked += len(rs)
					mu.Unlock()
				}
			}(w)
		}
		for {
			if h, _ := l.Head(); h >= 40 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		closedAt, _ := l.Head()
		wg.Wait()
		n, err := VerifyDirUnlocked(dir, kr)
		if err != nil || int(n) != acked || n != closedAt {
			t.Fatalf("round %d: %d events on disk (%v), %d acknowledged, head %d when Close returned", round, n, err, acked, closedAt)
		}
	}
}
