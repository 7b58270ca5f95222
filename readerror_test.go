package ucl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/dedup"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/summary"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// Issue 29 item 6, left over: bit flips in a projection's files made some
// reads return an error ("search fts: error loading chunk: tried to load
// freq chunk that doesn't exist", "decode side entry: fts: corrupt side
// table", "read stored version of timelines: … corrupt record", a bare
// EOF) instead of panicking, and those were returned on every read until
// a manual rebuild; reads whose first run found damage and healed it also
// still returned the first run's error. Every failure to read a
// projection must reset it, rebuild it from the log and read again: here
// each damaged copy answers every read without an error.
func TestProjectionReadErrorResetsAndRebuilds(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	words := strings.Fields("cello bach scales morning database cutover friday lesson violin piano berlin paris rain sun river mountain")
	r0 := rand.New(rand.NewSource(1))
	var b strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, `{"type":"store","session":"s%d","role":"user","content":"%s %s %s %d","time":"2023-05-08T10:%02d:00Z"}`+"\n",
			i%7, words[r0.Intn(len(words))], words[r0.Intn(len(words))], words[r0.Intn(len(words))], i, i%60)
	}
	if _, err := s.Append(ctx, AppendRequest{JSONL: b.String()}); err != nil {
		t.Fatal(err)
	}
	queries := []string{"cello", "bach", "river", "friday"}
	reads := func(s *Store) (string, error) {
		var out []any
		for _, q := range queries {
			r, err := s.Search(ctx, SearchRequest{Text: q, Now: "2024-01-01T00:00:00Z"})
			if err != nil {
				return "", fmt.Errorf("search %s: %w", q, err)
			}
			out = append(out, r)
		}
		ss, err := s.Sessions(ctx, SessionsRequest{})
		if err != nil {
			return "", fmt.Errorf("sessions: %w", err)
		}
		out = append(out, ss)
		j, err := json.Marshal(out)
		return string(j), err
	}
	if _, err := reads(s); err != nil {
		t.Fatal(err)
	}
	dir := s.st.Dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{} // what -> path relative to the store
	filepath.Walk(filepath.Join(dir, "projections"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case strings.HasSuffix(p, ".zap"):
			files["fts segment"] = rel
		case strings.HasSuffix(p, "fts/side.db"):
			files["fts side table"] = rel
		case strings.HasSuffix(p, "timelines.db"):
			files["timelines"] = rel
		}
		return nil
	})
	if len(files) != 3 {
		t.Fatalf("projection files: %v", files)
	}
	seeds := int64(14)
	if testing.Short() {
		seeds = 4
	}
	failed := 0
	for what, rel := range files {
		for seed := int64(1); seed <= seeds; seed++ {
			d := filepath.Join(t.TempDir(), "s")
			if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(d, rel)
			bb, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < 16; i++ {
				bb[r.Intn(len(bb))] ^= 1 << r.Intn(8)
			}
			if err := os.WriteFile(p, bb, 0o600); err != nil {
				t.Fatal(err)
			}
			s2, err := Open(d, Options{Warn: func(string) {}})
			if err != nil {
				t.Errorf("%s, seed %d: open: %v", what, seed, err)
				failed++
				continue
			}
			// The answers are not compared with the undamaged store's: a
			// flip can change a posting, a time or a count silently
			// (verify's to find, not a read's).
			if _, err := reads(s2); err != nil {
				t.Errorf("%s, seed %d: %v", what, seed, err)
				failed++
			}
			s2.Close()
		}
	}
	if failed > 0 {
		t.Logf("%d of %d damaged copies failed", failed, int64(len(files))*seeds)
	}
}

// Only damage is damage: a bad request, a missing id, a cancelled context
// or an error of the log is returned as it is (a reader resets and
// rebuilds nothing for them); each projection's corrupt-record sentinel
// and an error from bleve's files are damage to that projection.
func TestReadErrorClassification(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	for _, err := range []error{
		fmt.Errorf("search: %w", ErrBadRequest),
		fmt.Errorf("get: %w", timelines.ErrNotFound),
		fmt.Errorf("fts: %w", fts.ErrInvalidQuery),
		fmt.Errorf("read: %w", log.ErrShredded),
		context.Canceled,
	} {
		if _, ok := projections.Damaged(projstd.AsDamage(err)); ok {
			t.Errorf("%v: classified as damage", err)
		}
		if _, ok := projections.Damaged(guardRead(func() error { return err })); ok {
			t.Errorf("%v: guardRead calls it damage", err)
		}
	}
	for want, err := range map[string]error{
		"timelines": fmt.Errorf("neighbours: %w", timelines.ErrCorrupt),
		"fts":       fmt.Errorf("mentioned: %w", fts.ErrCorrupt),
		"summary":   fmt.Errorf("titles: %w", summary.ErrCorrupt),
		"dedup":     fmt.Errorf("x: %w", dedup.ErrCorrupt),
	} {
		if name, ok := projections.Damaged(guardRead(func() error { return err })); !ok || name != want {
			t.Errorf("%v: damage to %q (%v), want %s", err, name, ok, want)
		}
	}
	bleveErr := errors.New("error loading roaring bitmap: failed to read descriptive header: unexpected EOF")
	if name, ok := projections.Damaged(projections.GuardStore(ctx, "fts", func() error { return bleveErr })); !ok || name != "fts" {
		t.Errorf("a bleve read error: %v %q", ok, name)
	}
	cancel()
	if _, ok := projections.Damaged(projections.GuardStore(ctx, "fts", func() error { return ctx.Err() })); ok {
		t.Error("a cancelled search is damage")
	}
}
