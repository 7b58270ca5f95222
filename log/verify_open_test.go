package log

import (
	"errors"
	"os"
	"sync"
	"testing"
)

// The owner's scan (Log.Verify) reports what VerifyDir reports on the
// closed log, and appends running during the scan do not make it fail.
func TestVerifyOpenLog(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{SegmentSize: 4096})
	appendN(t, l, 200)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			if _, err := l.Append(ctx, storeEntry(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 20; i++ {
		rep, err := l.Verify(ctx, nil)
		if err != nil {
			t.Fatalf("verify during appends: %v", err)
		}
		if rep.Events < 200 || !rep.Decrypted {
			t.Fatalf("verify during appends: %+v", rep)
		}
	}
	wg.Wait()
	open, err := l.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	closed, err := VerifyDir(ctx, dir, kr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if open != closed || open.Events != 400 {
		t.Fatalf("open log %+v, closed %+v", open, closed)
	}
}

// Damage made while the log is open is reported as VerifyDir reports it
// once the log is closed: same seq, segment and offset.
func TestVerifyOpenLogDamage(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{})
	appendN(t, l, 10)
	p, b := lastSegment(t, dir)
	e := entryOffsets(t, b)[4]
	b[int(e.off)+uvarintLen(len(e.data))+HeaderSize+7] ^= 0x40
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Verify(ctx, nil)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Seq != 5 || ce.Offset != e.off || rep.Events != 4 {
		t.Fatalf("verify open: %+v %v", rep, err)
	}
	l.Close()
	rep2, err2 := VerifyDir(ctx, dir, kr, nil)
	if err2 == nil || err2.Error() != err.Error() || rep2 != rep {
		t.Fatalf("verify closed: %+v %v; open: %+v %v", rep2, err2, rep, err)
	}
}
