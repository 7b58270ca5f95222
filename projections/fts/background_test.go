package fts

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// TestSearchDuringBackgroundBatches: full batches execute in the
// background while Apply fills the next one and searches, document
// frequencies and meta lookups run meanwhile (run with -race). The live
// set at the end is the model's, and a search right after an Apply that
// filled a batch sees that batch.
func TestSearchDuringBackgroundBatches(t *testing.T) {
	events := randomEvents(11, 300)
	want := model(events)
	x := openT(t, t.TempDir(), Options{BatchSize: 13})
	stop := make(chan struct{})
	var searches atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx := context.Background()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := x.Search(ctx, Query{Text: "wallet gateway", K: 20}); err != nil {
				t.Error(err)
				return
			}
			if _, _, err := x.DocFreqs(ctx, []string{"wallet"}); err != nil {
				t.Error(err)
				return
			}
			if _, _, err := x.WithMeta(ctx, map[string]string{"k": "v"}, 5); err != nil {
				t.Error(err)
				return
			}
			searches.Add(1)
		}
	}()
	var e evs
	e.seq = uint64(len(events))
	for i, ev := range events {
		if err := x.Apply(ev); err != nil {
			t.Fatalf("apply seq %d: %v", ev.Seq, err)
		}
		if (i+1)%97 == 0 || i == len(events)-1 {
			if err := x.Commit(cpOf(ev)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// After a Commit, thirteen stores of a word no other chunk holds fill
	// one batch: the next search waits for it.
	for i := 0; i < 13; i++ {
		ev := e.store(fmt.Sprintf("late%02d", i), "s9", "user", log.KindConversation, 1, "zebra")
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("late%02d", i)] = ev.Store()
	}
	if got := find(t, x, Query{Text: "zebra", K: 100}); len(got) != 13 {
		t.Fatalf("a search after the batch filled found %d of its 13 chunks", len(got))
	}
	if err := x.Commit(cpOf(e.out[len(e.out)-1])); err != nil {
		t.Fatal(err)
	}
	if searches.Load() == 0 {
		t.Fatal("no search ran during the build")
	}
	for s := 0; s < 10; s++ {
		sess := fmt.Sprintf("s%d", s)
		var exp []string
		for id, st := range want {
			if st.Session == sess {
				exp = append(exp, id)
			}
		}
		got := find(t, x, Query{Text: "arweave bundle wallet upload segment index query vector session memory budget token context snapshot restore mirror gateway hash chain anchor proof merkle grant revoke rekey epoch cipher running compile deploy kernel network latency throughput zebra", Sessions: []string{sess}, K: 10000})
		if !reflect.DeepEqual(sorted(got), sorted(exp)) {
			t.Fatalf("session %s: got %d chunks, want %d", sess, len(got), len(exp))
		}
	}
}

// TestFailedBatchFailsLaterChanges: a full batch that failed in the
// background lost documents the pending side-table changes name, so the
// Apply that waits for it, every later Apply that executes a batch, and
// Commit fail, and the checkpoint stays where it was; reopening replays
// from it.
func TestFailedBatchFailsLaterChanges(t *testing.T) {
	dir := t.TempDir()
	var e evs
	for i := 0; i < 6; i++ {
		e.store(fmt.Sprintf("c%d", i), "s1", "user", log.KindConversation, int64(i+1), fmt.Sprintf("word%d text", i))
	}
	x := openT(t, dir, Options{BatchSize: 2})
	applyAll(t, x, e.out[:2], 0)
	cp0, _ := x.Checkpoint()
	if err := x.Apply(e.out[2]); err != nil {
		t.Fatal(err)
	}
	// The batch running now fails (as bleve's Batch does when a segment
	// cannot be built or persisted).
	boom := errors.New("segment not persisted")
	x.mu.Lock()
	if err := x.waitBatch(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	close(done)
	x.running = &runningBatch{done: done, err: boom}
	x.mu.Unlock()
	if err := x.Apply(e.out[3]); !errors.Is(err, boom) {
		t.Fatalf("apply after the failed batch: %v, want %v", err, boom)
	}
	if err := x.Apply(e.out[4]); !errors.Is(err, boom) {
		t.Fatalf("second apply after the failed batch: %v, want %v", err, boom)
	}
	if err := x.Commit(cpOf(e.out[4])); !errors.Is(err, boom) {
		t.Fatalf("commit after the failed batch: %v, want %v", err, boom)
	}
	if cp, _ := x.Checkpoint(); cp != cp0 {
		t.Fatalf("checkpoint %+v after a failed batch, want %+v", cp, cp0)
	}
	x.Close()
	x = openT(t, dir, Options{BatchSize: 2})
	cp, _ := x.Checkpoint()
	applyAll(t, x, e.out[cp.Seq:], 0)
	if n, _ := x.Count(); n != 6 {
		t.Fatalf("count %d after replay, want 6", n)
	}
	if got := find(t, x, Query{Text: "text", K: 10}); len(got) != 6 {
		t.Fatalf("search after replay found %v", got)
	}
}

// TestLargeBatchExecutesInApply: a full batch holding more than
// maxBackgroundBytes of text has executed when the Apply that filled it
// returns, so a build of large documents never holds two such batches
// (x.running stays set until a call waits for the batch).
func TestLargeBatchExecutesInApply(t *testing.T) {
	defer func(n int) { maxBackgroundBytes = n }(maxBackgroundBytes)
	maxBackgroundBytes = 1000
	x := openT(t, t.TempDir(), Options{BatchSize: 4})
	var e evs
	for i := 0; i < 4; i++ {
		content := strings.Repeat(fmt.Sprintf("word%d ", i), 50) // 300 bytes
		if err := x.Apply(e.store(fmt.Sprintf("c%d", i), "s1", "user", log.KindConversation, int64(i+1), content)); err != nil {
			t.Fatal(err)
		}
	}
	x.mu.Lock()
	running := x.running != nil
	x.mu.Unlock()
	if running {
		t.Fatal("a full batch of 1200 bytes of text (bound 1000) was left executing when Apply returned")
	}
	if n, err := x.idx.DocCount(); err != nil || n != 4 {
		t.Fatalf("bleve holds %d documents (%v) after the batch, want 4", n, err)
	}
}
