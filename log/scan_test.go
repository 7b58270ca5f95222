package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pooledLog writes n events of mixed sizes into small segments, so that a
// replay reads many whole files into its few pooled buffers (some files
// holding one big event, some dozens of small ones), and returns the
// contents in seq order.
func pooledLog(t *testing.T, n int) (*Log, string, []string) {
	t.Helper()
	dir := t.TempDir()
	l := openT(t, dir, testKeys(t), Options{Durability: None, SegmentSize: 16 << 10})
	var want []string
	var batch []Entry
	for i := 0; i < n; i++ {
		c := fmt.Sprintf("event %d ", i)
		switch i % 7 {
		case 0:
			c = strings.Repeat(c, 3000) // ~30 KB: a segment of its own
		case 3:
			c = strings.Repeat(c, 100)
		}
		want = append(want, c)
		batch = append(batch, Entry{Body: &Store{Kind: KindConversation, Session: "s", Role: "user", Content: c}})
		if len(batch) == 13 || i == n-1 {
			if _, err := l.AppendBatch(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	return l, dir, want
}

// A replay reads segment files into a few reused buffers: the events it
// hands out keep nothing of them (every kept event still reads as
// written after later files were read into the same buffers), from the
// start and from the middle of a file.
func TestEventsKeepNothingOfSegmentBuffers(t *testing.T) {
	l, dir, want := pooledLog(t, 700)
	defer l.Close()
	segs, err := listSegments(dir)
	if err != nil || len(segs) < 3*segPoolBuffers {
		t.Fatalf("%d segments (want several times the %d buffers): %v", len(segs), segPoolBuffers, err)
	}
	for _, from := range []uint64{1, 2, 350} {
		var kept []*Event
		if err := l.Events(ctx, from, 0, func(e *Event) error { kept = append(kept, e); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(kept) != len(want)-int(from)+1 {
			t.Fatalf("from %d: %d events", from, len(kept))
		}
		for i, e := range kept {
			if s := e.Store(); s == nil || s.Content != want[int(from)-1+i] || e.Seq != from+uint64(i) {
				t.Fatalf("from %d: event %d changed after the replay read on", from, e.Seq)
			}
			raw, err := l.Raw(e.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if h := HashRaw(raw); h != e.Hash {
				t.Fatalf("seq %d: hash %s, the event's bytes hash to %s", e.Seq, short(e.Hash), short(h))
			}
		}
	}
}

// A replay stopped early (fn fails, the context ends) returns at once with
// that error, whatever the buffers and jobs in flight; a replay after it
// works.
func TestEventsStopEarly(t *testing.T) {
	l, _, want := pooledLog(t, 400)
	defer l.Close()
	stop := errors.New("stop")
	for _, at := range []int{1, 100, 255, 256, 257, 399} {
		n := 0
		err := l.Events(ctx, 0, 0, func(*Event) error {
			if n++; n == at {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || n != at {
			t.Fatalf("stop at %d: %v after %d events", at, err, n)
		}
		c, cancel := context.WithCancel(ctx)
		n = 0
		err = l.Events(c, 0, 0, func(*Event) error {
			if n++; n == at {
				cancel()
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) || n > at+1 {
			t.Fatalf("cancel at %d: %v after %d events", at, err, n)
		}
	}
	n := 0
	if err := l.Events(ctx, 0, 0, func(*Event) error { n++; return nil }); err != nil || n != len(want) {
		t.Fatalf("replay after: %d events, %v", n, err)
	}
}

// Damage in a later segment: verify (on all cores) reports the first
// damaged event by seq, segment and offset, with every event before it
// counted, as the serial scan did; Events hands out the events before it.
func TestVerifyDamageInLaterSegment(t *testing.T) {
	l, dir, _ := pooledLog(t, 300)
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := segs[len(segs)/2]
	p := filepath.Join(dir, s.name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ents := entryOffsets(t, b)
	k := len(ents) - 1
	e := ents[k]
	seq := s.first + uint64(k)
	// A flipped bit in the body with the CRC made to match: only the seal
	// (and the hash chain after it) can tell.
	raw, final, err := checkEntry(e.data)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-3] ^= 0x10
	copy(e.data[len(raw):], appendCRC(append([]byte(nil), raw...), final)[len(raw):])
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Verify(ctx, nil)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Seq != seq || ce.Segment != s.name || ce.Offset != e.off || rep.Events != seq-1 {
		t.Fatalf("verify: %+v %v; want seq %d in %s at %d", rep, err, seq, s.name, e.off)
	}
	n := uint64(0)
	if err := l.Events(ctx, 0, 0, func(*Event) error { n++; return nil }); err == nil || n != seq-1 {
		t.Fatalf("events: %d events before %v; want %d", n, err, seq-1)
	}
	l.Close()
}

// A job's raw bytes stay as read while its work runs, however far the
// scan gets meanwhile: the buffer they are in goes back to the pool only
// when every job reading from it is done. The first entry's work waits
// (the sleep only gives the scan time to run ahead; what is checked is
// the bytes).
func TestPipelineHoldsSegmentBuffers(t *testing.T) {
	l, dir, want := pooledLog(t, 300)
	defer l.Close()
	n := 0
	work := func(raw []byte, st *decState, _ *Event) (*Event, error) {
		h, err := DecodeHeader(raw)
		if err != nil {
			return nil, err
		}
		if h.Seq == 1 {
			before := append([]byte(nil), raw...)
			time.Sleep(200 * time.Millisecond)
			if !bytes.Equal(before, raw) {
				return nil, fmt.Errorf("seq 1: its bytes changed while its work ran")
			}
		}
		return &Event{Header: h}, nil
	}
	err := pipeline(ctx, dir, 1, 0, false, work, func(ev *Event, e *scanEntry, _ error) error {
		n++
		return nil
	})
	if err != nil || n != len(want) {
		t.Fatalf("%d events, %v", n, err)
	}
}

// The bytes of an append request's events are carved from a slab that
// the next requests reuse once it is written (recycle): with writers
// committing together (group commit), requests failing (a reused id with
// other content) and resolving to existing events (a reused id with the
// same content), every event on disk is the one appended.
func TestAppendSlabsRecycled(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{Durability: Group})
	const writers, rounds = 6, 30
	var mu sync.Mutex
	want := map[ID]string{}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				n := 1 + (w*7+r*13)%40
				es := make([]Entry, n)
				for i := range es {
					c := strings.Repeat(fmt.Sprintf("w%d r%d e%d ", w, r, i), 1+(i*5+r)%60)
					es[i] = Entry{Body: &Store{Kind: KindConversation, Session: "s", Role: "user", Content: c}}
				}
				var fixed ID
				fixed[0], fixed[1] = byte(w), byte(r%3)
				es[0].ID = fixed
				res, err := l.AppendBatch(ctx, es)
				if err != nil {
					if !errors.Is(err, ErrIDConflict) {
						t.Error(err)
						return
					}
					continue
				}
				mu.Lock()
				for i, x := range res {
					if !x.Existed {
						want[x.ID] = es[i].Body.(*Store).Content
					}
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	n := 0
	if err := l.Events(ctx, 0, 0, func(e *Event) error {
		if c, ok := want[e.ID]; !ok || e.Store().Content != c {
			return fmt.Errorf("seq %d: content %.40q, appended %.40q", e.Seq, e.Store().Content, c)
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

// TestEventsDefaultChunkIDs: the default chunk ids of replayed store
// events (carved from shared slabs, strCache.hexID) are each its event
// id's hex, still after the events after it were decoded; an explicit
// chunk id is kept as given.
func TestEventsDefaultChunkIDs(t *testing.T) {
	l := openT(t, t.TempDir(), testKeys(t), Options{Durability: None})
	defer l.Close()
	es := make([]Entry, 300) // several slabs of 32 ids for each worker
	for i := range es {
		es[i] = storeEntry(i)
		if i%50 == 7 {
			es[i].Body.(*Store).ChunkID = fmt.Sprintf("chunk-%d", i)
		}
	}
	if _, err := l.AppendBatch(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	var got []*Event
	if err := l.Events(context.Background(), 0, 0, func(e *Event) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(es) {
		t.Fatalf("%d events, want %d", len(got), len(es))
	}
	for i, e := range got {
		want := e.ID.String()
		if i%50 == 7 {
			want = fmt.Sprintf("chunk-%d", i)
		}
		if c := e.Store().ChunkID; c != want {
			t.Fatalf("event %d: chunk id %q, want %q", i+1, c, want)
		}
	}
}

// readParseMatches checks that reading b piece bytes at a time
// (readParse) finds what parsing it whole does (parseSegment), and hands
// out every entry once, in order, before it returns.
func readParseMatches(t *testing.T, b []byte, piece int) {
	t.Helper()
	want, wst := parseSegment(b)
	var handed []fileEntry
	_, got, gst, emitErr, err := readParse(bytes.NewReader(b), make([]byte, 0, len(b)/3), nil, piece, func(ents []fileEntry, lo int) error {
		if lo != len(handed) {
			return fmt.Errorf("handed out from %d, after %d", lo, len(handed))
		}
		handed = append(handed, ents[lo:]...)
		return nil
	})
	if err != nil || emitErr != nil {
		t.Fatal(err, emitErr)
	}
	if gst.goodEnd != wst.goodEnd || gst.torn != wst.torn || gst.zeros != wst.zeros || fmt.Sprint(gst.err) != fmt.Sprint(wst.err) {
		t.Fatalf("piece %d: ends %+v, parsed whole %+v", piece, gst, wst)
	}
	if len(got) != len(want) || len(handed) != len(want) {
		t.Fatalf("piece %d: %d entries, %d handed out, parsed whole %d", piece, len(got), len(handed), len(want))
	}
	for i := range want {
		for _, e := range []fileEntry{got[i], handed[i]} {
			if e.off != want[i].off || e.end != want[i].end || e.final != want[i].final || !bytes.Equal(e.data, want[i].data) {
				t.Fatalf("piece %d: entry %d is %+v, parsed whole %+v", piece, i, e, want[i])
			}
		}
	}
}

// A segment read in pieces (a replay hands each piece's entries out as it
// reads) parses as it does whole: entries, and how the bytes end (zeros,
// a tear, damage), whatever the pieces.
func TestReadParsePieces(t *testing.T) {
	seg := segmentOf(goldenRaws(t), func(i int) bool { return i%2 == 0 })
	damaged := append([]byte{}, seg...)
	damaged[len(damaged)/2] ^= 0x40
	for _, b := range [][]byte{
		seg,
		append(append([]byte{}, seg...), make([]byte, 3000)...), // a preallocated zero tail
		seg[:len(seg)-7], // torn
		damaged,
		nil,
	} {
		for _, piece := range []int{1, 7, 64, 1000, len(b) + 1} {
			readParseMatches(t, b, piece)
		}
	}
}

// A fn's error (not errScanDone) stops the read: nothing after it is
// handed out.
func TestReadParseStops(t *testing.T) {
	seg := segmentOf(goldenRaws(t), func(int) bool { return true })
	stop := errors.New("stop")
	calls := 0
	_, _, _, emitErr, err := readParse(bytes.NewReader(seg), nil, nil, 1, func([]fileEntry, int) error {
		calls++
		return stop
	})
	if err != nil || emitErr != stop || calls != 1 {
		t.Fatalf("err %v, emit's %v after %d calls; want emit's stop after 1", err, emitErr, calls)
	}
}

func FuzzReadParse(f *testing.F) {
	seg := segmentOf(goldenRaws(f), func(int) bool { return true })
	f.Add(seg, uint16(100))
	f.Add(append(seg, 0, 0, 0, 0), uint16(3))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint16(2))
	f.Fuzz(func(t *testing.T, b []byte, piece uint16) {
		readParseMatches(t, b, int(piece)%4096+1)
	})
}
