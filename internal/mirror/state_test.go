package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func openTestState(t *testing.T) *State {
	t.Helper()
	st, err := OpenState(filepath.Join(t.TempDir(), "mirror.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestStateSummary(t *testing.T) {
	st := openTestState(t)
	put := func(first, last uint64, status SegStatus) {
		t.Helper()
		if err := st.Put(SegmentState{LogID: testLogID, FirstSeq: first, LastSeq: last, HeadHash: Hash{byte(last)}, TxID: "tx", Status: status, Size: 10}); err != nil {
			t.Fatal(err)
		}
	}
	put(1, 10, StatusConfirmed)
	put(11, 20, StatusSubmitted)
	put(21, 30, StatusConfirmed)
	put(31, 40, StatusPosting)
	put(51, 60, StatusConfirmed) // after a hole

	m, err := st.Summary(testLogID)
	if err != nil {
		t.Fatal(err)
	}
	if m.SafeSeq != 10 {
		t.Errorf("safe up to %d, want 10 (11..20 unconfirmed)", m.SafeSeq)
	}
	if m.CoveredSeq != 30 || m.CoveredHash != (Hash{30}) {
		t.Errorf("covered %d, want 30 (31..40 only posting)", m.CoveredSeq)
	}
	if m.Segments != 5 || m.Posting != 1 || m.Submitted != 1 || m.Confirmed != 3 || m.Bytes != 50 {
		t.Errorf("counts %+v", m)
	}
	if len(m.Unconfirmed) != 2 || m.Unconfirmed[0].FirstSeq != 11 || m.Unconfirmed[1].FirstSeq != 31 {
		t.Errorf("unconfirmed %+v", m.Unconfirmed)
	}
	if err := st.MarkConfirmed(testLogID, 11, 7); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkSubmitted(testLogID, 31); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkConfirmed(testLogID, 31, 8); err != nil {
		t.Fatal(err)
	}
	if safe, _ := st.SafeUpTo(testLogID); safe != 40 {
		t.Errorf("safe up to %d after confirmations, want 40 (hole at 41..50)", safe)
	}
	// Another log is independent.
	if m, _ := st.Summary([16]byte{9}); m.Segments != 0 {
		t.Errorf("other log has %d segments", m.Segments)
	}
	if err := st.MarkSubmitted(testLogID, 99); !errors.Is(err, ErrStateNotFound) {
		t.Errorf("mark unknown: %v", err)
	}
}

func TestStateRejectsOverlap(t *testing.T) {
	st := openTestState(t)
	if err := st.Put(SegmentState{LogID: testLogID, FirstSeq: 10, LastSeq: 20}); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]uint64{{5, 10}, {15, 16}, {20, 30}, {1, 100}} {
		if err := st.Put(SegmentState{LogID: testLogID, FirstSeq: r[0], LastSeq: r[1]}); !errors.Is(err, ErrStateOverlap) {
			t.Errorf("%v: err = %v, want overlap", r, err)
		}
	}
	// Replacing the same first seq and neighbours that touch are fine.
	for _, r := range [][2]uint64{{10, 20}, {1, 9}, {21, 30}} {
		if err := st.Put(SegmentState{LogID: testLogID, FirstSeq: r[0], LastSeq: r[1]}); err != nil {
			t.Errorf("%v: %v", r, err)
		}
	}
}

// TestStateZeroedPageIsErrorNotPanic: a mirror.db with a zeroed page made
// status and sync push panic inside bbolt. Every page is zeroed in turn;
// each operation must either work (bbolt has two meta pages) or return
// ErrMirrorStateCorrupt.
func TestStateZeroedPageIsErrorNotPanic(t *testing.T) {
	const ps = 4096
	corrupt := 0
	for pg := 0; ; pg++ {
		p := filepath.Join(t.TempDir(), "mirror.db")
		st, err := OpenState(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(0); i < 60; i++ {
			if err := st.Put(SegmentState{LogID: testLogID, FirstSeq: i*10 + 1, LastSeq: i*10 + 10, TxID: "tx", Status: StatusSubmitted}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if (pg+1)*ps > len(b) {
			break
		}
		copy(b[pg*ps:(pg+1)*ps], make([]byte, ps))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		check := func(op string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, ErrMirrorStateCorrupt) {
				t.Errorf("page %d zeroed: %s: %v, want nil or ErrMirrorStateCorrupt", pg, op, err)
			}
			if err != nil {
				corrupt++
			}
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("page %d zeroed: panic: %v", pg, r)
				}
			}()
			st, err := OpenState(p)
			check("open", err)
			if err != nil {
				return
			}
			defer st.Close()
			_, err = st.Summary(testLogID)
			check("summary", err)
			_, err = st.Get(testLogID, 1)
			check("get", err)
			err = st.Put(SegmentState{LogID: testLogID, FirstSeq: 1001, LastSeq: 1002})
			check("put", err)
			check("mark", st.MarkConfirmed(testLogID, 1, 5))
			check("delete", st.Delete(testLogID, 11))
		}()
	}
	if corrupt == 0 {
		t.Fatal("no zeroed page was reported as corrupt")
	}
}
