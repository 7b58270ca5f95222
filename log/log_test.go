package log

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
)

var ctx = context.Background()

func testKeys(t testing.TB) *crypto.Keyring {
	t.Helper()
	kr, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func openT(t testing.TB, dir string, kr *crypto.Keyring, o Options) *Log {
	t.Helper()
	o.Keys = kr
	l, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func storeEntry(i int) Entry {
	return Entry{Body: &Store{Kind: KindConversation, Session: fmt.Sprintf("s%d", i%3), Role: "user",
		Content: fmt.Sprintf("message number %d about the weather", i), Meta: map[string]string{"n": fmt.Sprint(i)}}}
}

func appendN(t testing.TB, l *Log, n int) []Result {
	t.Helper()
	var out []Result
	for i := 0; i < n; i++ {
		r, err := l.Append(ctx, storeEntry(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func collect(t testing.TB, l *Log) []*Event {
	t.Helper()
	var evs []*Event
	if err := l.Events(ctx, 0, 0, func(e *Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestAppendReadReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{})
	rs := appendN(t, l, 50)
	for i, r := range rs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("seq %d at %d", r.Seq, i)
		}
	}
	head, hh := l.Head()
	if head != 50 || hh != rs[49].Hash {
		t.Fatalf("head %d %s", head, hh)
	}
	l.Close()
	l = openT(t, dir, kr, Options{})
	defer l.Close()
	evs := collect(t, l)
	if len(evs) != 50 {
		t.Fatalf("%d events", len(evs))
	}
	for i, e := range evs {
		s := e.Store()
		if s == nil || s.Content != fmt.Sprintf("message number %d about the weather", i) || s.Meta["n"] != fmt.Sprint(i) {
			t.Fatalf("event %d: %+v", i, e.Body)
		}
		if e.Hash != rs[i].Hash || s.ChunkID != e.ID.String() {
			t.Fatalf("event %d hash/chunk id", i)
		}
	}
	// Ranges verify against the chain.
	var n int
	if err := l.Records(ctx, 10, 20, func(r *Record) error { n++; return nil }); err != nil || n != 11 {
		t.Fatalf("range: %d %v", n, err)
	}
	r, err := l.Append(ctx, storeEntry(99))
	if err != nil || r.Seq != 51 {
		t.Fatalf("append after reopen: %v %d", err, r.Seq)
	}
}

func TestIdempotentAppend(t *testing.T) {
	l := openT(t, t.TempDir(), testKeys(t), Options{})
	defer l.Close()
	id := ID{1, 2, 3}
	e := Entry{ID: id, Body: &Store{Kind: KindKnowledge, Content: "the sky is blue"}}
	r1, err := l.Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3)
	r2, err := l.Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Existed || r2.Seq != r1.Seq || r2.Hash != r1.Hash {
		t.Fatalf("re-append: %+v vs %+v", r2, r1)
	}
	// Same id, different content: error, nothing written.
	_, err = l.Append(ctx, Entry{ID: id, Body: &Store{Kind: KindKnowledge, Content: "the sky is green"}})
	if !errors.Is(err, ErrIDConflict) {
		t.Fatalf("conflict: %v", err)
	}
	_, err = l.Append(ctx, Entry{ID: id, Body: &Tombstone{Session: "x"}})
	if !errors.Is(err, ErrIDConflict) {
		t.Fatalf("type conflict: %v", err)
	}
	// Duplicates inside one batch resolve to the first.
	id2 := ID{9}
	rs, err := l.AppendBatch(ctx, []Entry{{ID: id2, Body: &Store{Kind: KindKnowledge, Content: "a"}}, {ID: id2, Body: &Store{Kind: KindKnowledge, Content: "a"}}})
	if err != nil || rs[0].Seq != rs[1].Seq || !rs[1].Existed {
		t.Fatalf("in-batch dup: %+v %v", rs, err)
	}
	if head, _ := l.Head(); head != 5 {
		t.Fatalf("head %d, want 5", head)
	}
}

func TestBatchAllOrNothing(t *testing.T) {
	l := openT(t, t.TempDir(), testKeys(t), Options{})
	defer l.Close()
	appendN(t, l, 2)
	_, err := l.AppendBatch(ctx, []Entry{storeEntry(1), {Body: &Store{Kind: KindConversation, Content: "  "}}, storeEntry(2)})
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
	if head, _ := l.Head(); head != 2 {
		t.Fatalf("bad batch wrote events: head %d", head)
	}
	if len(collect(t, l)) != 2 {
		t.Fatal("events on disk changed")
	}
}

func TestConcurrentAppendersGroup(t *testing.T) {
	for _, d := range []Durability{Sync, Group, None} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			kr := testKeys(t)
			l := openT(t, dir, kr, Options{Durability: d, SegmentSize: 64 << 10})
			const writers, per = 16, 40
			var wg sync.WaitGroup
			seen := make(chan uint64, writers*per)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < per; i++ {
						r, err := l.Append(ctx, storeEntry(w*per+i))
						if err != nil {
							t.Error(err)
							return
						}
						seen <- r.Seq
					}
				}(w)
			}
			wg.Wait()
			close(seen)
			got := map[uint64]bool{}
			for s := range seen {
				if got[s] {
					t.Fatalf("seq %d handed out twice", s)
				}
				got[s] = true
			}
			l.Close()
			l = openT(t, dir, kr, Options{})
			defer l.Close()
			if evs := collect(t, l); len(evs) != writers*per {
				t.Fatalf("%d events after reopen", len(evs))
			}
			segs, _ := listSegments(dir)
			if len(segs) < 2 {
				t.Fatalf("expected several segment files, got %d", len(segs))
			}
		})
	}
}

func TestSecondProcessRefused(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, testKeys(t), Options{})
	defer l.Close()
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	if _, err := VerifyDir(ctx, dir, nil, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("verify while locked: %v", err)
	}
}

func TestWrongKeyRefused(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, testKeys(t), Options{})
	appendN(t, l, 3)
	l.Close()
	before := dirSize(t, dir)
	_, err := Open(dir, Options{Keys: testKeys(t)})
	if !errors.Is(err, crypto.ErrWrongKey) {
		t.Fatalf("open with wrong key: %v", err)
	}
	if after := dirSize(t, dir); after != before {
		t.Fatalf("log changed: %d → %d bytes", before, after)
	}
	// Without keys, raw reads still work.
	l, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(ctx, storeEntry(1)); !errors.Is(err, ErrNoKeys) {
		t.Fatalf("append without keys: %v", err)
	}
	n := 0
	if err := l.Records(ctx, 0, 0, func(*Record) error { n++; return nil }); err != nil || n != 3 {
		t.Fatalf("raw read: %d %v", n, err)
	}
}

func dirSize(t testing.TB, dir string) int64 {
	var n int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		fi, _ := e.Info()
		if !e.IsDir() && e.Name() != "LOCK" {
			n += fi.Size()
		}
	}
	return n
}

func TestAppendValidation(t *testing.T) {
	l := openT(t, t.TempDir(), testKeys(t), Options{Now: func() time.Time { return time.UnixMilli(1000) }})
	defer l.Close()
	for _, tc := range []struct {
		name string
		e    Entry
	}{
		{"no body", Entry{}},
		{"empty content", Entry{Body: &Store{Kind: KindConversation}}},
		{"bad kind", Entry{Body: &Store{Kind: 9, Content: "x"}}},
		{"empty tombstone", Entry{Body: &Tombstone{}}},
		{"backwards range", Entry{Body: &Tombstone{From: 10, To: 5}}},
		{"grant without grantee", Entry{Body: &ShareGrant{}}},
		{"rekey epoch 0", Entry{Body: &Rekey{}}},
	} {
		if _, err := l.Append(ctx, tc.e); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if head, _ := l.Head(); head != 0 {
		t.Fatalf("invalid appends wrote %d events", head)
	}
}

// TestAppendTimeClockReads: entries without a time take the clock's, read
// once for every nowEvery of them (a clock read an event was 3-5% of an
// append's CPU); each request reads it afresh, and an entry's own time is
// kept. Without the pipeline the reads follow the request's order; under
// it (a request of pipelineMin entries or more) each part of the request
// (partEnds) reads its own, on its own core.
func TestAppendTimeClockReads(t *testing.T) {
	for _, n := range []int{40, pipelineMin + 40} {
		var reads atomic.Int64
		l := openT(t, t.TempDir(), testKeys(t), Options{Now: func() time.Time {
			// the clock ticks a millisecond a read
			return time.UnixMilli(1000 + reads.Add(1))
		}})
		appendN(t, l, 1)
		batch := make([]Entry, n)
		for i := range batch {
			batch[i] = storeEntry(i)
		}
		batch[20].Time = 7 // its own time
		if _, err := l.AppendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 1)
		evs := collect(t, l)
		l.Close()
		if len(evs) != n+2 {
			t.Fatalf("%d events, want %d", len(evs), n+2)
		}
		if evs[0].Header.Time != 1001 || evs[21].Header.Time != 7 {
			t.Fatalf("batch of %d: times %d and %d, want 1001 and 7", n, evs[0].Header.Time, evs[21].Header.Time)
		}
		// Groups of entries that share one clock read: nowEvery entries
		// without a time in order, or under the pipeline each piece of
		// feedStep entries (taken by whichever core is free).
		pipelined := n >= pipelineMin && runtime.GOMAXPROCS(0) > 1
		wantReads := int64(2)
		var prev int64
		k := 0 // entries without a time of the current group before this one
		for i := 0; i < n; i++ {
			if pipelined && i%feedStep == 0 && k > 0 {
				k = 0 // a new piece: a read of its own
			}
			if i == 20 {
				continue
			}
			got := evs[i+1].Header.Time
			if k%nowEvery == 0 {
				wantReads++
				if got <= 1001 || got > 1000+reads.Load() {
					t.Fatalf("batch of %d: event %d has time %d, not a read of the request", n, i+2, got)
				}
				if !pipelined && got != prev+1 && i > 0 {
					t.Fatalf("batch of %d: event %d has time %d, want the next read after %d", n, i+2, got, prev)
				}
			} else if got != prev {
				t.Fatalf("batch of %d: event %d has time %d, want %d (the read of its group)", n, i+2, got, prev)
			}
			prev = got
			k++
		}
		if got := reads.Load(); got != wantReads {
			t.Fatalf("batch of %d: %d clock reads, want %d", n, got, wantReads)
		}
		if last := evs[n+1].Header.Time; last != 1000+wantReads {
			t.Fatalf("batch of %d: the next request has time %d, want %d (a read of its own)", n, last, 1000+wantReads)
		}
	}
}

// TestEventOverMaxSizeRefused: a store event over MaxEventSize fails the
// whole batch with ErrTooLarge (it used to be written, at any size); one
// at the bound is written; a rekey of many keys is not bound by it.
func TestEventOverMaxSizeRefused(t *testing.T) {
	l := openT(t, t.TempDir(), testKeys(t), Options{})
	defer l.Close()
	appendN(t, l, 1)
	big := &Store{Kind: KindConversation, Role: "user", Content: strings.Repeat("x", MaxEventSize)}
	if err := CheckSize(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("CheckSize = %v", err)
	}
	if err := l.Check([]Entry{{Body: big}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Check = %v", err)
	}
	if _, err := l.AppendBatch(ctx, []Entry{storeEntry(1), {Body: big}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("AppendBatch = %v", err)
	}
	if head, _ := l.Head(); head != 1 {
		t.Fatalf("head %d after a refused batch", head)
	}
	// Fill the body to the byte: version, flags, kind, session "", role.
	fit := &Store{Kind: KindConversation, Role: "user"}
	h := Header{Version: FormatVersion, Type: TypeStore}
	b0, _ := EncodeBody(&Store{Kind: KindConversation, Role: "user", Content: "x"}, &h)
	fit.Content = strings.Repeat("x", MaxEventSize-len(b0)+1-2) // the uvarint length takes 3 bytes, not 1
	if b, _ := EncodeBody(fit, &h); len(b) != MaxEventSize {
		t.Fatalf("test body is %d bytes", len(b))
	}
	if _, err := l.Append(ctx, Entry{Body: fit}); err != nil {
		t.Fatalf("an event at the bound: %v", err)
	}
	keys := make([]WrappedKey, MaxEventSize/40)
	if err := CheckSize(&Rekey{Epoch: 2, Keys: keys}); err != nil {
		t.Fatalf("rekey: %v", err)
	}
}

// A log opened as it was left writes nothing: its head mark already says
// the head (a query process opens the log and only reads). A log whose
// mark says less, or another durability, still gets its mark rewritten.
func TestOpenUnchangedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{})
	appendN(t, l, 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	head := filepath.Join(dir, headMarkFile)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(head, old, old); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, kr, Options{})
	fi, err := os.Stat(head)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(old) {
		t.Errorf("opening an unchanged log rewrote its head mark (modified %v)", fi.ModTime())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Another durability: the mark changes and is written.
	l = openT(t, dir, kr, Options{Durability: None})
	if m, ok, err := readHeadMark(dir); err != nil || !ok || m.Durable || m.Seq != 5 {
		t.Errorf("head mark after opening with durability none: %+v %v %v, want seq 5 not durable", m, ok, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
