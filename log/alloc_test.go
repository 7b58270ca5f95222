package log

import (
	"path/filepath"
	"runtime"
	"testing"
)

// Allocations an event costs on the append and replay paths (issue 26:
// the garbage collector was a quarter to a third of an append's CPU). The
// standard library's AES-GCM takes two of each (its key schedule and its
// GCM state, returned behind interfaces, so they escape): what the log
// adds is held to near nothing.

// TestAppendAllocsPerEvent: a batch of 256 allocates a few objects for
// the batch and none an event.
func TestAppendAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	l := openT(t, filepath.Join(t.TempDir(), "log"), testKeys(t), Options{Durability: None})
	defer l.Close()
	es := make([]Entry, 256)
	for i := range es {
		es[i] = Entry{Body: &Store{Kind: KindConversation, Session: "s", Role: "user", Content: "the same words again and again"}}
	}
	n := testing.AllocsPerRun(10, func() {
		if _, err := l.AppendBatch(ctx, es); err != nil {
			t.Fatal(err)
		}
	})
	// None an event: a preparing goroutine seals every body with one
	// ChaCha20-Poly1305 value (crypto.Opener.Seal; a value an event was
	// one, format 2's AES-GCM two); measured 21 a batch.
	if per := n / float64(len(es)); per > 0.25 {
		t.Fatalf("%.2f allocations an appended event (%.0f a batch of %d), want at most 0.25", per, n, len(es))
	}
	// Bytes: the caller's Result (64), little else (measured 76-79; 107
	// with a ChaCha20-Poly1305 value an event, 1,361 with AES-GCM); a
	// request's per-event state and its commit's list are reused (they
	// were another 250). The bound leaves room for a pool emptied by a
	// collection.
	const batches = 20
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := 0; i < batches; i++ {
		if _, err := l.AppendBatch(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m1)
	if per := float64(m1.TotalAlloc-m0.TotalAlloc) / (batches * float64(len(es))); per > 400 {
		t.Fatalf("%.0f bytes allocated an appended event, want at most 400", per)
	}
}

// TestReplayAllocsPerEvent: decrypting and decoding a store event with a
// replay worker's state allocates the event with its body and its
// plaintext, which the content shares (one allocation; they were two),
// and the chunk id: not the ChaCha20-Poly1305 (the worker's Opener puts
// each key into one; format 2's AES-GCM made two), nor the session and
// role again when they repeat.
func TestReplayAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	l := openT(t, filepath.Join(t.TempDir(), "log"), testKeys(t), Options{Durability: None})
	defer l.Close()
	if _, err := l.AppendBatch(ctx, []Entry{{Body: &Store{Kind: KindConversation, Session: "s1", Role: "user", Content: "some words"}}}); err != nil {
		t.Fatal(err)
	}
	raw, err := l.Raw(1)
	if err != nil {
		t.Fatal(err)
	}
	var st decState
	var ev *Event
	n := testing.AllocsPerRun(50, func() {
		if ev, err = l.decryptReuse(raw, &st); err != nil {
			t.Fatal(err)
		}
	})
	if s := ev.Store(); s == nil || s.Session != "s1" || s.Role != "user" || s.Content != "some words" {
		t.Fatalf("decoded %+v", ev.Body)
	}
	if n > 2 {
		t.Fatalf("%.0f allocations a replayed event, want at most 2", n)
	}
}

// TestVerifyAllocsPerEvent: verify and import only check a body, so it is
// decrypted into the worker's scratch buffer, decoded into the worker's
// store, and no event is made: nothing is allocated (the
// ChaCha20-Poly1305 and the default chunk id were two).
func TestVerifyAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	kr := testKeys(t)
	l := openT(t, filepath.Join(t.TempDir(), "log"), kr, Options{Durability: None})
	defer l.Close()
	if _, err := l.AppendBatch(ctx, []Entry{{Body: &Store{Kind: KindConversation, Session: "s1", Role: "user", Content: "some words"}}}); err != nil {
		t.Fatal(err)
	}
	raw, err := l.Raw(1)
	if err != nil {
		t.Fatal(err)
	}
	st := decState{hashed: true, checkOnly: true}
	n := testing.AllocsPerRun(50, func() {
		if _, err := decryptBody(kr, raw, nil, &st); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%.0f allocations to check an event, want 0", n)
	}
	for _, b := range st.scratch[:cap(st.scratch)] {
		if b != 0 {
			t.Fatal("plaintext left in the scratch buffer")
		}
	}
}

// TestReplayPathsAllocsPerEvent: the whole replay paths, not one body: a
// replay (Events) allocates about its two an event, a verify (VerifyDir)
// nearly nothing an event: the pipeline's jobs come back for the next
// entries instead of three new slices a chunk, and verify's event is a
// slot of its job (it was one allocation an event).
func TestReplayPathsAllocsPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	const n = 4000
	dir := filepath.Join(t.TempDir(), "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{Durability: None})
	es := make([]Entry, 500)
	for i := range es {
		es[i] = Entry{Body: &Store{Kind: KindConversation, Session: "s1", Role: "user", Content: "the same words again and again"}}
	}
	for i := 0; i < n; i += len(es) {
		if _, err := l.AppendBatch(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	mallocs := func(f func()) float64 {
		f() // the pools filled once
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		f()
		runtime.ReadMemStats(&m1)
		return float64(m1.Mallocs-m0.Mallocs) / n
	}
	got := 0
	per := mallocs(func() {
		got = 0
		if err := l.Events(ctx, 0, 0, func(*Event) error { got++; return nil }); err != nil {
			t.Fatal(err)
		}
	})
	if got != n || per > 2.2 {
		t.Fatalf("Events: %d events, %.2f allocations an event, want %d and at most 2.2", got, per, n)
	}
	l.Close()
	per = mallocs(func() {
		if rep, err := VerifyDir(ctx, dir, kr, nil); err != nil || rep.Events != n {
			t.Fatal(rep, err)
		}
	})
	if per > 0.2 {
		t.Fatalf("VerifyDir: %.2f allocations an event, want at most 0.2", per)
	}
}

// TestEventStoreSizes: a replayed store event and its plaintext in one
// allocation take no more than the two allocations they were (the
// struct's and the plaintext's, each rounded up to its size class), give
// or take the steps of the size classes (an eighth): no plaintext size
// makes the event markedly larger. The plaintext fits.
func TestEventStoreSizes(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation sizes differ under the race detector")
	}
	alloc := func(f func()) uint64 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		f()
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	var keepES *eventStore
	var keepB []byte
	for n := 1; n <= 5000; n += 7 {
		one := alloc(func() { keepES, keepB = newEventStore(n) })
		if cap(keepB) < n || len(keepB) != 0 {
			t.Fatalf("plaintext of %d bytes: buffer len %d cap %d", n, len(keepB), cap(keepB))
		}
		two := alloc(func() { keepES, keepB = new(eventStore), make([]byte, 0, n) })
		if float64(one) > float64(two)*1.125 {
			t.Fatalf("plaintext of %d bytes: %d bytes in one allocation, %d in two", n, one, two)
		}
	}
	_, _ = keepES, keepB
}
