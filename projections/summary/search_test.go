package summary

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// oracleIndex is the in-memory session search of format 2, rebuilt from
// the summaries: the stored index must score exactly as it does.
type oracleIndex struct {
	postings map[string]map[string]int // term -> session -> tf
	lengths  map[string]int            // session -> document length
	total    int
}

func newOracle(sums []Summary) *oracleIndex {
	o := &oracleIndex{postings: map[string]map[string]int{}, lengths: map[string]int{}}
	for i := range sums {
		s := &sums[i]
		if s.Kind != KindSession {
			continue
		}
		tf := map[string]int{}
		n := 0
		for _, w := range textutil.ContentWords(s.Text) {
			tf[w]++
			n++
		}
		for _, w := range s.KeyTerms {
			tf[w] += keyTermBoost
			n += keyTermBoost
		}
		o.lengths[s.ID] = n
		o.total += n
		for t, c := range tf {
			if o.postings[t] == nil {
				o.postings[t] = map[string]int{}
			}
			o.postings[t][s.ID] = c
		}
	}
	return o
}

func (si *oracleIndex) query(words []string, k int) []SessionHit {
	n := len(si.lengths)
	if n == 0 || len(words) == 0 {
		return nil
	}
	avg := float64(si.total) / float64(n)
	if avg == 0 {
		avg = 1
	}
	seen := map[string]bool{}
	scores := map[string]float64{}
	for _, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
		p := si.postings[w]
		if len(p) == 0 {
			continue
		}
		df := float64(len(p))
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		ids := make([]string, 0, len(p))
		for id := range p {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			tf := float64(p[id])
			norm := tf + bm25K1*(1-bm25B+bm25B*float64(si.lengths[id])/avg)
			scores[id] += idf * tf * (bm25K1 + 1) / norm
		}
	}
	hits := make([]SessionHit, 0, len(scores))
	for id, s := range scores {
		hits = append(hits, SessionHit{Session: id, Score: s})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Session < hits[j].Session
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// withHash runs fn with h as the session hash.
func withHash(t *testing.T, h func(string) uint32, fn func()) {
	old := sessHash
	sessHash = h
	defer func() { sessHash = old }()
	fn()
}

// manySessionOps is a random history over many sessions with a Zipf
// vocabulary (terms shared by some sessions, not all): appends, earlier
// turns, replacements, tombstones by id, session and range, and edits.
func manySessionOps(r *rand.Rand, n, sessions int) ([]log.Body, map[string]*log.Store) {
	var bodies []log.Body
	live := map[string]*log.Store{}
	var ids []string
	now := projtest.BaseTime
	pick := func() string {
		for i := 0; i < 50 && len(ids) > 0; i++ {
			if id := ids[r.Intn(len(ids))]; live[id] != nil {
				return id
			}
		}
		return ""
	}
	for len(bodies) < n {
		now += int64(1 + r.Intn(1000))
		switch p := r.Intn(100); {
		case p < 80:
			st := &log.Store{ChunkID: fmt.Sprintf("c%05d", len(bodies)), Kind: log.KindConversation,
				Session: fmt.Sprintf("sess-%d", r.Intn(sessions)), Role: "user", Time: now,
				Content: projtest.TextZipf(r, 5+r.Intn(40), 400)}
			if r.Intn(15) == 0 {
				st.Time = projtest.BaseTime + r.Int63n(now-projtest.BaseTime)
			}
			live[st.ChunkID] = st
			ids = append(ids, st.ChunkID)
			bodies = append(bodies, st)
		case p < 86:
			if id := pick(); id != "" {
				st := *live[id]
				st.Content = projtest.TextZipf(r, 5+r.Intn(30), 400)
				live[id] = &st
				bodies = append(bodies, &st)
			}
		case p < 92:
			if id := pick(); id != "" {
				delete(live, id)
				bodies = append(bodies, &log.Tombstone{Chunks: []string{id}})
			}
		case p < 94:
			s := fmt.Sprintf("sess-%d", r.Intn(sessions))
			for id, st := range live {
				if st.Session == s {
					delete(live, id)
				}
			}
			bodies = append(bodies, &log.Tombstone{Session: s})
		case p < 96:
			from := projtest.BaseTime + r.Int63n(now-projtest.BaseTime+1)
			tb := &log.Tombstone{From: from, To: from + int64(r.Intn(20000))}
			for id, st := range live {
				if st.Time >= tb.From && st.Time < tb.To {
					delete(live, id)
				}
			}
			bodies = append(bodies, tb)
		default:
			if id := pick(); id != "" {
				st := *live[id]
				st.Content = projtest.TextZipf(r, 5+r.Intn(30), 400)
				ed := &log.Edit{Target: id, Store: st}
				if other := pick(); other != "" && other != id {
					ed.Removes = []string{other}
					delete(live, other)
				}
				live[id] = &st
				bodies = append(bodies, ed)
			}
		}
	}
	return bodies, live
}

// TestStoredSearchMatchesOracle compares the stored index with the
// in-memory one over the same summaries after every commit of random
// histories, for many queries: same sessions, same order, same scores bit
// for bit; with the real hash and with one that collides constantly (so
// named postings and groups that grow and shrink are exercised).
func TestStoredSearchMatchesOracle(t *testing.T) {
	hashes := map[string]func(string) uint32{
		"fnv":     fnvHash,
		"collide": func(id string) uint32 { return fnvHash(id) % 5 },
	}
	for name, h := range hashes {
		for seed := int64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s seed %d", name, seed), func(t *testing.T) {
				withHash(t, h, func() {
					r := rand.New(rand.NewSource(seed))
					ops, _ := manySessionOps(r, 700, 30)
					evs := chain(t, ops...)
					x := openT(t, t.TempDir(), Options{})
					compared := 0
					for i := 0; i < len(evs); {
						j := min(len(evs), i+1+r.Intn(40))
						applyAll(t, x, evs[i:j], 0)
						i = j
						all, err := x.All()
						if err != nil {
							t.Fatal(err)
						}
						o := newOracle(all)
						for q := 0; q < 25; q++ {
							var ws []string
							for w := 0; w < 1+r.Intn(5); w++ {
								ws = append(ws, projtest.ZipfWord(r.Intn(120)))
							}
							text := fmt.Sprint(ws)
							k := 1 + r.Intn(40)
							got, err := x.Search(context.Background(), text, k)
							if err != nil {
								t.Fatal(err)
							}
							want := o.query(textutil.ContentWords(text), k)
							if len(got) != len(want) {
								t.Fatalf("%q k=%d: %d hits, oracle %d", text, k, len(got), len(want))
							}
							for h := range got {
								if got[h].Session != want[h].Session || math.Float64bits(got[h].Score) != math.Float64bits(want[h].Score) {
									t.Fatalf("%q k=%d hit %d: %v, oracle %v", text, k, h, got[h], want[h])
								}
							}
							compared += len(got)
						}
					}
					if compared == 0 {
						t.Fatal("nothing compared")
					}
				})
			})
		}
	}
}

// TestIncrementalSearchIndexIsRebuild: with colliding hashes the search
// buckets too are a function of the live summaries (the dump of
// TestIncrementalIsBitForBitRebuild covers them with the real hash).
func TestIncrementalSearchIndexIsRebuild(t *testing.T) {
	withHash(t, func(id string) uint32 { return fnvHash(id) % 3 }, func() {
		for seed := int64(1); seed <= 3; seed++ {
			r := rand.New(rand.NewSource(seed))
			bodies, live := manySessionOps(r, 500, 12)
			inc := openT(t, t.TempDir(), Options{})
			applyAll(t, inc, chain(t, bodies...), 1)
			all, err := inc.All()
			if err != nil {
				t.Fatal(err)
			}
			// The live chunks, stored once in another order.
			ids := make([]string, 0, len(live))
			for id := range live {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			var stores []log.Body
			for _, id := range ids {
				stores = append(stores, live[id])
			}
			r.Shuffle(len(stores), func(i, j int) { stores[i], stores[j] = stores[j], stores[i] })
			full := openT(t, t.TempDir(), Options{})
			applyAll(t, full, chain(t, stores...), 0)
			// Chunk records name their event's seq, which differs here:
			// compare what the search depends on.
			keep := func(lines []string) (out []string) {
				for _, l := range lines {
					if strings.HasPrefix(l, "search_") || strings.HasPrefix(l, "summaries/") {
						out = append(out, l)
					}
				}
				return out
			}
			got, want := keep(dump(t, inc)), keep(dump(t, full))
			if len(all) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: incremental and rebuilt stores differ (%d vs %d records)", seed, len(got), len(want))
			}
			postings := 0
			for _, l := range got {
				if len(l) > len("search_terms/") && l[:len("search_terms/")] == "search_terms/" {
					postings++
				}
			}
			if postings == 0 {
				t.Fatal("no postings stored")
			}
		}
	})
}

func FuzzDecodePostings(f *testing.F) {
	f.Add(encodePostings([]posting{{h: 3, tf: 1}, {h: 9, tf: 4}}))
	f.Add(encodePostings([]posting{{h: 7, tf: 2, named: true, id: "a"}, {h: 7, tf: 1, named: true, id: "b"}, {h: 1 << 31, tf: 3}}))
	f.Add([]byte{0, 0})
	f.Add([]byte{5, 2, 0, 2})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x7f, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := decodePostings(b)
		if err != nil {
			return
		}
		b2 := encodePostings(ps)
		ps2, err := decodePostings(b2)
		if err != nil || fmt.Sprint(ps) != fmt.Sprint(ps2) {
			t.Fatalf("round trip: %v\n%v\n%v", err, ps, ps2)
		}
	})
}
