package ucl

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentReaders runs searches, contexts, gets and session reads
// from many goroutines while one goroutine appends (meant for -race; the
// Makefile's race target runs it). Every answer is checked: a chunk
// acknowledged before a read started is found by that read, and every
// chunk returned carries exactly the content stored under its id.
func TestConcurrentReaders(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	const seeds, writes, readers, rounds, sessions = 40, 40, 6, 12, 4
	content := map[string]string{} // chunk id -> stored text; filled before the goroutines start
	session := map[string]string{}
	add := func(id string, i int, token string) {
		content[id] = fmt.Sprintf("%s note %d about the %s garden and the %s", id, i, []string{"tomato", "basil", "cello", "ferry"}[i%4], token)
		session[id] = fmt.Sprintf("s%d", i%sessions)
	}
	for i := 0; i < seeds; i++ {
		add(fmt.Sprintf("seed%03d", i), i, fmt.Sprintf("seedtok%03d", i))
	}
	for i := 0; i < writes; i++ {
		add(fmt.Sprintf("new%03d", i), i, fmt.Sprintf("freshtok%03d", i))
	}
	remember := func(id string) error {
		_, err := s.Remember(ctx, RememberRequest{ChunkID: id, Content: content[id], Session: session[id],
			Time: "2024-01-02T03:04:05Z"})
		return err
	}
	for i := 0; i < seeds; i++ {
		if err := remember(fmt.Sprintf("seed%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CatchUp(ctx, CatchUpRequest{}); err != nil {
		t.Fatal(err)
	}
	// Reopen: the projections then load what they need on the first
	// reads, which run side by side.
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	var acked atomic.Int64 // new chunks acknowledged so far: new000 .. new(acked-1)
	errs := make(chan error, readers+1)
	fail := func(format string, args ...any) { errs <- fmt.Errorf(format, args...) }
	checkChunk := func(what, id, got string) bool {
		if want, ok := content[id]; !ok || got != want {
			fail("%s: chunk %q has content %q, want %q", what, id, got, want)
			return false
		}
		return true
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < writes; i++ {
			if err := remember(fmt.Sprintf("new%03d", i)); err != nil {
				fail("append new%03d: %v", i, err)
				return
			}
			acked.Store(int64(i + 1))
		}
	}()
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				n := int(acked.Load()) // acknowledged before this round's reads
				seed := fmt.Sprintf("seed%03d", (r*rounds+i)%seeds)
				ids := []string{seed}
				if n > 0 {
					ids = append(ids, fmt.Sprintf("new%03d", (r+i)%n))
				}
				// Search: each unique token finds its chunk, with its content.
				for _, id := range ids {
					tok := content[id][strings.LastIndex(content[id], " ")+1:]
					req := SearchRequest{Text: tok, K: 5}
					if i%2 == 0 {
						req.Session = session[id] // the session-filtered path (REST, proxy)
					}
					res, err := s.Search(ctx, req)
					if err != nil {
						fail("search %s: %v", tok, err)
						return
					}
					found := false
					for _, h := range res.Results {
						if !checkChunk("search "+tok, h.ChunkID, h.Content) {
							return
						}
						if req.Session != "" && h.Session != req.Session {
							fail("search %s in %s: result %s of session %s", tok, req.Session, h.ChunkID, h.Session)
							return
						}
						found = found || h.ChunkID == id
					}
					if !found {
						fail("search %s (reader %d, %d acknowledged): %s not among %d results", tok, r, n, id, len(res.Results))
						return
					}
				}
				// Get: every id is found, with its content.
				g, err := s.Get(ctx, GetRequest{IDs: ids})
				if err != nil {
					fail("get %v: %v", ids, err)
					return
				}
				for j, it := range g.Items {
					if !it.Found || it.ID != ids[j] || !checkChunk("get", it.ID, it.Content) {
						fail("get %v: item %d is %+v", ids, j, it)
						return
					}
				}
				// Session: at least the chunks acknowledged in it, each intact.
				sid := session[seed]
				want := map[string]bool{}
				for id, sess := range session {
					if sess == sid && (strings.HasPrefix(id, "seed") || id < fmt.Sprintf("new%03d", n)) {
						want[id] = true
					}
				}
				sr, err := s.Session(ctx, SessionRequest{ID: sid})
				if err != nil {
					fail("session %s: %v", sid, err)
					return
				}
				if sr.Total != len(sr.Chunks) {
					fail("session %s: total %d, %d chunks", sid, sr.Total, len(sr.Chunks))
					return
				}
				for _, c := range sr.Chunks {
					if session[c.ID] != sid || !checkChunk("session "+sid, c.ID, c.Content) {
						fail("session %s returned chunk %s of session %q", sid, c.ID, session[c.ID])
						return
					}
					delete(want, c.ID)
				}
				if len(want) > 0 {
					fail("session %s (%d acknowledged): missing %d acknowledged chunks", sid, n, len(want))
					return
				}
				// Context: the seed's text is in the assembled context.
				cr, err := s.Context(ctx, ContextRequest{SearchRequest: SearchRequest{Text: content[seed][strings.LastIndex(content[seed], " ")+1:]}, Budget: 2000})
				if err != nil {
					fail("context: %v", err)
					return
				}
				if !strings.Contains(cr.Context, content[seed]) {
					fail("context for %s lacks its text", seed)
					return
				}
				ss, err := s.Sessions(ctx, SessionsRequest{})
				if err != nil {
					fail("sessions: %v", err)
					return
				}
				if len(ss.Sessions) != sessions {
					fail("sessions: %d, want %d", len(ss.Sessions), sessions)
					return
				}
			}
		}(r)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// After the writer: every chunk is there exactly once.
	g, err := s.Get(ctx, GetRequest{IDs: func() []string {
		var ids []string
		for id := range content {
			ids = append(ids, id)
		}
		return ids
	}()})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range g.Items {
		if !it.Found || it.Content != content[it.ID] {
			t.Errorf("after the writer: %s found %v content %q", it.ID, it.Found, it.Content)
		}
	}
}
