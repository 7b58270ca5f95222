package ucl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/internal/store"
)

func repairEvents(from, to int, text string) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, `{"type":"store","session":"s1","role":"user","content":"%s %d","time":"2024-01-01T10:%02d:00Z"}`+"\n", text, i, i%60)
	}
	return b.String()
}

// After `audit repair` cut the log below a mirrored segment and new events
// took those seqs, sync status and status said the new events were on
// Arweave and confirmed: the mirror state must not vouch for a segment
// whose recorded head is not the local event at its last seq.
func TestRepairedLogNotClaimedMirrored(t *testing.T) {
	gw := arlocaltest.Start(t)
	ctx := context.Background()
	wa, err := arweave.LoadWallet("arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Mint(wa.Address(), 1e15); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Init(dir, InitOptions{Wallet: wa})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	// Two segments: 1..20 and 21..30.
	for _, r := range [][2]int{{1, 20}, {21, 30}} {
		if _, err := s.Append(ctx, AppendRequest{JSONL: repairEvents(r[0], r[1], "first history")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Push(ctx, PushRequest{Gateway: gw.URL()}); err != nil {
			t.Fatal(err)
		}
		if err := gw.Mine(1); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.SyncStatus(ctx, SyncStatusRequest{Gateway: gw.URL(), Refresh: true})
	if err != nil || st.CoveredSeq != 30 || st.SafeSeq != 30 || len(st.Segments) != 2 {
		t.Fatalf("before the repair: %+v %v", st, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage event 25, repair (the log is cut to 24), then new events take
	// seqs 25..30.
	flipEventByte(t, filepath.Join(dir, store.LogDir), 25)
	rep, err := RepairLog(dir)
	if err != nil || rep == nil || rep.Head != 24 {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, AppendRequest{JSONL: repairEvents(25, 30, "second history")}); err != nil {
		t.Fatal(err)
	}
	st, err = s.SyncStatus(ctx, SyncStatusRequest{Gateway: gw.URL(), Refresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.CoveredSeq != 20 || st.SafeSeq != 20 || st.Unmirrored != 10 {
		t.Fatalf("sync status after the repair: covered %d, safe %d, unmirrored %d; want 20, 20, 10", st.CoveredSeq, st.SafeSeq, st.Unmirrored)
	}
	if !st.Segments[1].Diverged || st.Segments[0].Diverged {
		t.Fatalf("segments after the repair: %+v", st.Segments)
	}
	status, err := s.Status(ctx, StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if status.Mirror == nil || status.Mirror.CoveredSeq != 20 || status.Mirror.SafeSeq != 20 || !strings.Contains(status.MirrorText, "up to 20 of 30") {
		t.Fatalf("status after the repair: %+v %q", status.Mirror, status.MirrorText)
	}
	if status.Mirror.Diverged != 1 || !strings.Contains(status.MirrorText, "another history") {
		t.Fatalf("status does not say a segment diverged: %+v %q", status.Mirror, status.MirrorText)
	}
	if e, err := s.Push(ctx, PushRequest{Gateway: gw.URL(), Estimate: true}); err != nil || e.Estimate == nil || e.Estimate.PendingEvents != 10 {
		t.Fatalf("estimate after the repair: %+v %v, want 10 pending events", e, err)
	}
	// A push refuses (it would fork the mirror) and says how far the
	// mirror really covers this log.
	pr, err := s.Push(ctx, PushRequest{Gateway: gw.URL()})
	if !errors.Is(err, mirror.ErrDiverged) || pr == nil || pr.CoveredSeq != 20 || pr.SafeSeq != 20 {
		t.Fatalf("push after the repair: %+v %v", pr, err)
	}
}

// flipEventByte flips a bit inside event seq's body, walking the
// tidwall/wal framing (uvarint length ‖ entry) of the log's segment files.
func flipEventByte(t *testing.T, logDir string, seq int) {
	t.Helper()
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	i := 1
	for _, e := range ents {
		if len(e.Name()) != 20 {
			continue
		}
		p := filepath.Join(logDir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(b); i++ {
			n, k := uvarintAt(b[off:])
			if k == 0 {
				t.Fatalf("bad framing in %s", p)
			}
			if i == seq {
				b[off+k+int(n)-3] ^= 0x10
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
				return
			}
			off += k + int(n)
		}
	}
	t.Fatalf("event %d not found", seq)
}

func uvarintAt(b []byte) (uint64, int) {
	var x uint64
	var s uint
	for i, c := range b {
		if c < 0x80 {
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}
