package query_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/query"
)

// tamperedLog builds a real encrypted log with a peanut-allergy chunk and
// its projections, then changes the role "user" to "tool" in timelines.db
// (four bytes a record, no checksum stops it). Since timelines v4 the
// content itself is not in the file (it is read back from the log by
// seq), so "peanut" can only be changed in the session title.
func tamperedLog(t *testing.T) (*log.Log, string) {
	t.Helper()
	kr, err := crypto.NewKeyring()
	if err != nil {
		t.Fatal(err)
	}
	l, err := log.Open(filepath.Join(t.TempDir(), "log"), log.Options{Keys: kr, Durability: log.None})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ctx := context.Background()
	var es []log.Entry
	for i, c := range []string{"I have a severe peanut allergy.", "We talked about the weather in Lisbon.", "The build uses Go modules."} {
		es = append(es, log.Entry{Time: int64(i+1) * 1000, Body: &log.Store{ChunkID: string(rune('a' + i)), Session: "s1", Role: "user", Kind: log.KindConversation, Time: int64(i+1) * 1000, Content: c}})
	}
	if _, err := l.AppendBatch(ctx, es); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "projections")
	set, err := projstd.Open(dir, l, projstd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	set.Close()
	path := filepath.Join(dir, "timelines", "timelines.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("peanut")); n != 1 {
		t.Fatalf("fixture: %d copies of peanut in timelines.db, want the session title's only", n)
	}
	// Chunk records name the role by a one-byte code after the session
	// (timelines format 5): "s1" then 1 (user); 4 is tool.
	if !bytes.Contains(b, []byte("\x02s1\x01")) {
		t.Fatal("fixture: no role in timelines.db")
	}
	b = bytes.ReplaceAll(b, []byte("\x02s1\x01"), []byte("\x02s1\x04"))
	b = bytes.ReplaceAll(b, []byte("peanut"), []byte("cashew"))
	if err := os.WriteFile(path, bytes.ReplaceAll(b, []byte("user"), []byte("tool")), 0o600); err != nil {
		t.Fatal(err)
	}
	return l, dir
}

// TestTamperedTimelinesReturnCashewAllergy: six bytes changed in
// timelines.db made queries return "cashew allergy" while the log says
// peanut. Results are now checked against the log by seq: the tampered
// content is never returned, the error names the damaged projection, and
// the owner is told so it can flag the projection for a rebuild.
func TestTamperedTimelinesReturnCashewAllergy(t *testing.T) {
	l, dir := tamperedLog(t)
	set, err := projstd.Open(dir, l, projstd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	var flagged []string
	src := query.Sources{Chunks: set.Timelines, Text: set.FTS, Sessions: set.Summary, Log: l,
		OnDamaged: func(p, reason string) {
			flagged = append(flagged, p)
			if err := set.MarkDamaged(p, reason); err != nil {
				t.Error(err)
			}
		}}
	e := query.New(src, query.Options{})
	now := time.UnixMilli(10_000)
	resp, err := e.Search(context.Background(), query.Request{Text: "peanut allergy", Now: now, Mode: query.ModeBM25})
	if err == nil {
		for _, r := range resp.Results {
			if strings.Contains(r.Content, "cashew") || r.Role == "tool" {
				t.Fatalf("tampered chunk returned: %+v", r)
			}
		}
		t.Fatal("search over tampered timelines: no error")
	}
	if name, ok := projections.Damaged(err); !ok || name != "timelines" || !errors.Is(err, projections.ErrDamaged) {
		t.Fatalf("error %v: want a damaged-timelines error", err)
	}
	if len(flagged) != 1 || flagged[0] != "timelines" {
		t.Fatalf("OnDamaged calls: %v", flagged)
	}
	_, err = e.Context(context.Background(), query.ContextRequest{Request: query.Request{Text: "peanut allergy", Now: now, Mode: query.ModeBM25}, Budget: 1000})
	if _, ok := projections.Damaged(err); !ok {
		t.Fatalf("context over tampered timelines: %v", err)
	}
	// The flag makes Heal rebuild from the log; then the log's text comes back.
	healed, err := set.Heal(context.Background(), nil)
	if err != nil || !healed {
		t.Fatalf("heal: %v %v", healed, err)
	}
	e = query.New(query.Sources{Chunks: set.Timelines, Text: set.FTS, Log: l}, query.Options{})
	resp, err = e.Search(context.Background(), query.Request{Text: "peanut allergy", Now: now, Mode: query.ModeBM25})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) == 0 || resp.Results[0].Content != "I have a severe peanut allergy." {
		t.Fatalf("after heal: %+v", resp.Results)
	}
}

// editChunk rewrites chunk id in the closed timelines.db under dir with
// edit applied and its Sum recomputed (a deliberate, careful edit).
func editChunk(t *testing.T, dir, id string, edit func(c *timelines.Chunk)) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "timelines", timelines.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("chunks"))
		seq := tx.Bucket([]byte("ids")).Get(timelines.ChunkKey(id)) // version 7: records are keyed by seq
		c, err := timelines.DecodeChunk(id, b.Get(seq))
		if err != nil {
			return err
		}
		edit(c)
		c.Sum = c.ContentSum()
		v, err := timelines.EncodeChunk(c)
		if err != nil {
			return err
		}
		return b.Put(seq, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A careful edit that keeps the record's sum consistent is caught by the
// log's id index when it moves the chunk to another seq, and by the full
// check (the event read back from the log) when it changes the content.
func TestEditedTimelinesWithConsistentSum(t *testing.T) {
	l, dir := tamperedLog(t)
	// Undo the byte-level tamper first: a clean rebuild.
	set, err := projstd.Open(dir, l, projstd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Projector.Rebuild(context.Background(), []string{"timelines"}, nil); err != nil {
		t.Fatal(err)
	}
	set.Close()
	now := time.UnixMilli(10_000)
	search := func(full bool) error {
		set, err := projstd.Open(dir, l, projstd.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer set.Close()
		e := query.New(query.Sources{Chunks: set.Timelines, Text: set.FTS, Log: l, FullCheck: full}, query.Options{})
		_, err = e.Search(context.Background(), query.Request{Text: "peanut allergy", Now: now, Mode: query.ModeBM25})
		return err
	}
	if err := search(true); err != nil {
		t.Fatalf("clean timelines: %v", err)
	}
	editChunk(t, dir, "a", func(c *timelines.Chunk) { c.Meta = map[string]string{"allergy": "cashew"} })
	if err := search(true); !errors.Is(err, projections.ErrDamaged) {
		t.Fatalf("full check over an edited record: %v", err)
	}
	editChunk(t, dir, "a", func(c *timelines.Chunk) { c.Meta = nil; c.Seq = 2 })
	if err := search(false); !errors.Is(err, projections.ErrDamaged) {
		t.Fatalf("cheap check over a record moved to another seq: %v", err)
	}
}
