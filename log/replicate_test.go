package log

import (
	"bytes"
	"errors"
	"testing"
)

// The replication hook sees every committed event exactly as Raw returns
// it, in seq order; a refusing hook fails the append with
// ErrNotReplicated, keeps the events in the WAL and stops further appends.
func TestReplicateHook(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	var got [][]byte
	var next uint64 = 1
	refuse := false
	l := openT(t, dir, kr, Options{Replicate: func(first uint64, raws [][]byte) error {
		if first != next {
			t.Errorf("replicate from %d, want %d", first, next)
		}
		next = first + uint64(len(raws))
		for _, r := range raws {
			got = append(got, append([]byte(nil), r...))
		}
		if refuse {
			return errors.New("stream unreachable")
		}
		return nil
	}})
	appendN(t, l, 5)
	if len(got) != 5 {
		t.Fatalf("hook saw %d events, want 5", len(got))
	}
	for i, r := range got {
		raw, err := l.Raw(uint64(i + 1))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, r) {
			t.Fatalf("event %d: hook bytes differ from Raw", i+1)
		}
	}
	refuse = true
	if _, err := l.Append(ctx, storeEntry(9)); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("append with a refusing hook: %v, want ErrNotReplicated", err)
	}
	refuse = false
	if _, err := l.Append(ctx, storeEntry(10)); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("append after a refusal: %v, want ErrNotReplicated", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, kr, Options{})
	defer l.Close()
	if head, _ := l.Head(); head != 6 {
		t.Fatalf("head after reopen %d, want 6 (the unreplicated event stays in the WAL)", head)
	}
}
