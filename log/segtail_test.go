package log

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func eventsFrom(t *testing.T, l *Log, from uint64) ([]*Event, error) {
	t.Helper()
	var evs []*Event
	err := l.Events(ctx, from, 0, func(e *Event) error { evs = append(evs, e); return nil })
	return evs, err
}

// TestTailReadsMatchWholeReads reads from the middle of a segment through
// the remembered offsets and checks the events are those of a whole read;
// damage in the part read is still reported.
func TestTailReadsMatchWholeReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openT(t, dir, testKeys(t), Options{})
	defer l.Close()
	appendN(t, l, 300)
	all := collect(t, l)
	for _, from := range []uint64{250, 250, 299, 300, 120} {
		got, err := eventsFrom(t, l, from)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, all[from-1:]) {
			t.Fatalf("events from %d differ from a whole read", from)
		}
	}
	segs, err := listSegments(dir)
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments %v %v", segs, err)
	}
	path := filepath.Join(dir, segs[0].name)
	segTails.Lock()
	n := len(segTails.m[path].offs)
	segTails.Unlock()
	if n != 300 {
		t.Fatalf("%d entry offsets remembered, want 300", n)
	}

	// Appends after the remembered end are read from where it stops.
	appendN(t, l, 5)
	all = collect(t, l)
	if got, err := eventsFrom(t, l, 302); err != nil || !reflect.DeepEqual(got, all[301:]) {
		t.Fatalf("events after an append: %v", err)
	}

	// A file replaced at the same path is read whole.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if got, err := eventsFrom(t, l, 280); err != nil || !reflect.DeepEqual(got, all[279:]) {
		t.Fatalf("events after the file was replaced: %v", err)
	}

	// A flipped byte in the last event is found by a tail read.
	if _, err := eventsFrom(t, l, 303); err != nil {
		t.Fatal(err)
	}
	ents := entryOffsets(t, b) // the file may go on with preallocated zeros
	at := int(ents[len(ents)-1].end) - 6
	b[at] ^= 0x40
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b[at:at+1], int64(at)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = eventsFrom(t, l, 303)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Seq != 305 {
		t.Fatalf("read over a damaged last event: %v, want a CorruptionError at seq 305", err)
	}
}
