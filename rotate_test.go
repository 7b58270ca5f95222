package ucl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/rotate"
)

// walkBytes reports every file under dir whose bytes contain any needle.
func walkBytes(t *testing.T, dir string, needles ...[]byte) []string {
	t.Helper()
	// An open store's full-text index merges segments in the background:
	// a file listed by the walk can be gone when it is read. Its content is
	// then in the merged segment, which a fresh walk lists, so a walk that
	// meets a vanished file starts over.
	for attempt := 0; ; attempt++ {
		var hits []string
		vanished := false
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil && errors.Is(err, fs.ErrNotExist) {
				vanished = true
				return filepath.SkipAll
			}
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				vanished = true
				return filepath.SkipAll
			}
			if err != nil {
				return err
			}
			for _, n := range needles {
				if bytes.Contains(b, n) {
					hits = append(hits, fmt.Sprintf("%s holds %q", p, n[:min(len(n), 16)]))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !vanished {
			return hits
		}
		if attempt == 50 {
			t.Fatalf("walk %s: files kept vanishing", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func replayAll(t *testing.T, s *Store) []map[string]any {
	t.Helper()
	var out []map[string]any
	err := s.Replay(context.Background(), ReplayRequest{IncludeTombstoned: true}, func(b json.RawMessage) error {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Rotation shreds exactly the tombstoned chunks: live ones stay readable
// (through the rekey events), the tombstoned ones report shredded, and the
// old key and the tombstoned text are nowhere in the store directory.
func TestRotateKeysShreds(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	var jsonl strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&jsonl, `{"type":"store","session":"s%d","id":"c%d","content":"chunk %d says zanzibar%03d"}`+"\n", i%4, i, i, i)
	}
	if _, err := s.Append(ctx, AppendRequest{JSONL: jsonl.String()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SnapshotCreate(ctx, SnapshotCreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Session: "s1", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	oldKey := s.st.Keys.KeyOf(1)
	res, err := s.RotateKeys(ctx, RotateKeysRequest{KeysPerEvent: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.FromEpoch != 1 || res.ToEpoch != 2 || len(res.Shredded) != 10 || res.Rekeyed != 31 || res.RekeyEvents != 5 || len(res.SnapshotsDeleted) != 1 {
		t.Fatalf("rotation: %+v", res)
	}
	if s.st.Keys.Has(1) || s.st.Keys.Current() != 2 {
		t.Fatalf("keyring epochs after rotation: %v", s.st.Keys.Epochs())
	}
	var needles [][]byte
	needles = append(needles, oldKey)
	for i := 1; i < 40; i += 4 {
		needles = append(needles, []byte(fmt.Sprintf("zanzibar%03d", i)))
	}
	if hits := walkBytes(t, s.Dir(), needles...); len(hits) > 0 {
		t.Fatalf("after rotation: %v", hits)
	}
	// Live content reads back; shredded events say so.
	shredded, live := 0, 0
	for _, m := range replayAll(t, s) {
		switch {
		case m["shredded"] == true:
			shredded++
		case m["type"] == "store":
			live++
			if !strings.Contains(m["content"].(string), "zanzibar") {
				t.Fatalf("live event: %v", m)
			}
		}
	}
	if shredded != 10 || live != 30 {
		t.Fatalf("replay: %d shredded, %d live", shredded, live)
	}
	r, err := s.Search(ctx, SearchRequest{Text: "zanzibar", K: 100})
	if err != nil || len(r.Results) != 30 {
		t.Fatalf("search after rotation: %v %v", r, err)
	}
	// Reopen: the new key alone opens it; verify reports the shredded ones.
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyLog(ctx, dir, Options{}, nil)
	if err != nil || rep.Shredded != 10 {
		t.Fatalf("verify after rotation: %+v %v", rep, err)
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n := len(replayAll(t, s2)); n != 40+1+5 {
		t.Fatalf("replay after reopen: %d events", n)
	}
	var liveID string
	for _, m := range replayAll(t, s2) {
		if m["type"] == "store" && m["shredded"] == nil {
			liveID = m["chunk_id"].(string)
		}
	}
	if g, err := s2.Get(ctx, GetRequest{IDs: []string{liveID}}); err != nil || !g.Items[0].Found {
		t.Fatalf("get after rotation: %+v %v", g, err)
	}
	// The audit log: shredded store events and shredded tombstones.
	var shreddedStores, shreddedTombs int
	err = s2.AuditLog(ctx, AuditLogRequest{}, func(a AuditEntry) error {
		if a.Shredded {
			shreddedStores++
		}
		if a.Type == "tombstone" && a.Erasure == "shredded" {
			shreddedTombs++
		}
		return nil
	})
	if err != nil || shreddedStores != 10 || shreddedTombs != 1 {
		t.Fatalf("audit log: %d shredded events, %d shredded tombstones, %v", shreddedStores, shreddedTombs, err)
	}
	show, err := s2.AuditShow(ctx, AuditShowRequest{Seq: 2})
	if err != nil || !strings.HasPrefix(show.Status, "shredded") {
		t.Fatalf("audit show of a shredded event: %+v %v", show, err)
	}
	// A second rotation keeps everything live readable.
	res2, err := s2.RotateKeys(ctx, RotateKeysRequest{})
	if err != nil || res2.FromEpoch != 2 || len(res2.Shredded) != 0 || res2.ShreddedBefore != 10 {
		t.Fatalf("second rotation: %+v %v", res2, err)
	}
	r, err = s2.Search(ctx, SearchRequest{Text: "zanzibar", K: 100})
	if err != nil || len(r.Results) != 30 {
		t.Fatalf("search after second rotation: %v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(dir, rotate.JournalFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("journal left: %v", err)
	}
	_ = log.ErrShredded
}

// A store with nothing in it rotates too (one empty rekey event marks the
// rotation), and twice in a row.
func TestRotateKeysEmptyStore(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	for want := uint32(2); want <= 3; want++ {
		res, err := s.RotateKeys(ctx, RotateKeysRequest{})
		if err != nil || res.ToEpoch != want || res.RekeyEvents != 1 || len(res.Shredded) != 0 {
			t.Fatalf("rotation to %d: %+v %v", want, res, err)
		}
	}
	if _, err := s.Remember(ctx, RememberRequest{Content: "after two rotations"}); err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	s.Close()
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := replayAll(t, s2); len(got) != 3 || got[2]["content"] != "after two rotations" {
		t.Fatalf("replay: %v", got)
	}
}

// Appends racing a rotation land under one epoch or the other and are all
// readable afterwards: none is lost to the wipe.
func TestRotateKeysConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	for i := 0; i < 50; i++ {
		if _, err := s.Remember(ctx, RememberRequest{Content: fmt.Sprintf("before %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			if _, err := s.Remember(ctx, RememberRequest{Content: fmt.Sprintf("during %d", n)}); err != nil {
				t.Error(err)
				done <- n
				return
			}
			n++
		}
	}()
	if _, err := s.RotateKeys(ctx, RotateKeysRequest{KeysPerEvent: 3}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	n := <-done
	dir := s.Dir()
	s.Close()
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	stores := 0
	for _, m := range replayAll(t, s2) {
		if m["shredded"] == true {
			t.Fatalf("event lost to the rotation: %v", m)
		}
		if m["type"] == "store" {
			stores++
		}
	}
	t.Logf("%d appends during the rotation", n)
	if stores != 50+n {
		t.Fatalf("%d store events readable, %d appended", stores, 50+n)
	}
}

// After a rotation the data keys a grant discloses still open their events
// (through the rekey events), and a shredded event has none to give.
func TestDEKAfterRotation(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	jsonl := `{"type":"store","session":"a","id":"k1","content":"keep this one"}` + "\n" +
		`{"type":"store","session":"b","id":"g1","content":"gone after shredding"}` + "\n"
	res, err := s.Append(ctx, AppendRequest{JSONL: jsonl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Session: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RotateKeys(ctx, RotateKeysRequest{}); err != nil {
		t.Fatal(err)
	}
	raw, err := s.st.Log.Raw(res.Results[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	dek, err := s.st.Log.DEK(raw)
	if err != nil {
		t.Fatalf("live event after rotation: %v", err)
	}
	ev, err := log.DecryptWithDEK(raw, dek)
	if err != nil || ev.Store() == nil || ev.Store().Content != "keep this one" {
		t.Fatalf("decrypt with the disclosed key: %+v %v", ev, err)
	}
	raw, err = s.st.Log.Raw(res.Results[1].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.Log.DEK(raw); !errors.Is(err, log.ErrShredded) {
		t.Fatalf("shredded event gave a key: %v", err)
	}
}
