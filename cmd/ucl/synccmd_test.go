package main

import (
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl"
)

// `ucl sync status` says in its text what --json says: which segments
// diverged (the engine's flag, set by TestRepairedLogNotClaimedMirrored's
// scenario), on their line and in a sentence.
func TestSyncStatusShowsDiverged(t *testing.T) {
	segs := []ucl.SegmentView{
		{First: 1, Last: 20, Status: "confirmed", TxID: "tx-one", Height: 7},
		{First: 21, Last: 30, Status: "confirmed", TxID: "tx-two", Height: 8, Diverged: true},
	}
	lines := strings.Split(strings.TrimSuffix(segmentTable(segs), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("table:\n%s", strings.Join(lines, "\n"))
	}
	if strings.Contains(lines[1], "DIVERGED") || !strings.Contains(lines[2], "tx-two  DIVERGED") {
		t.Fatalf("the diverged segment is not the one marked:\n%s", strings.Join(lines, "\n"))
	}
	if !strings.HasPrefix(lines[3], "1 segment(s) DIVERGED") {
		t.Fatalf("no sentence about the diverged segment:\n%s", strings.Join(lines, "\n"))
	}
	if got := segmentTable(segs[:1]); strings.Contains(got, "DIVERGED") {
		t.Fatalf("nothing diverged, yet:\n%s", got)
	}
}
