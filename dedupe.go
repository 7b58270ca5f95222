package ucl

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/index"
	"github.com/unlimitedcontext/ucl/projections/dedup"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// Near-duplicate report parameters (see Store.Dedupe).
const (
	// DefaultDedupeThreshold is the word-shingle Jaccard similarity from
	// which two items are reported as near-duplicates.
	DefaultDedupeThreshold = 0.8
	dedupeShingle          = 3  // words per shingle
	dedupeBands            = 16 // LSH bands of
	dedupeRows             = 4  // minhash values each
)

// DedupeRequest asks for the near-duplicate report.
type DedupeRequest struct {
	// Threshold is the Jaccard similarity of word 3-shingles (of the
	// normalized text) from which a pair is reported; 0:
	// DefaultDedupeThreshold. 1 reports only items equal after
	// normalization.
	Threshold float64  `json:"threshold,omitempty"`
	Sessions  []string `json:"sessions,omitempty"` // only these sessions
	Kinds     []string `json:"kinds,omitempty"`
	// Limit caps the groups listed (0: all); Groups counts them all.
	Limit    int      `json:"limit,omitempty"`
	Progress Progress `json:"-"`
}

// DedupeMember is one item of a near-duplicate group.
type DedupeMember struct {
	ID      string `json:"id"`
	Seq     uint64 `json:"seq"`
	Time    string `json:"time"`
	Session string `json:"session,omitempty"`
	Role    string `json:"role,omitempty"`
	Kind    string `json:"kind"`
	Snippet string `json:"snippet"`
}

// DedupeGroup is a set of items connected by near-duplicate pairs.
type DedupeGroup struct {
	Members []DedupeMember `json:"members"` // oldest first
	// MinSimilarity is the lowest similarity among the group's reported
	// pairs; Exact says every member normalizes to the same text.
	MinSimilarity float64 `json:"min_similarity"`
	Exact         bool    `json:"exact"`
}

// DedupeResult is the report; nothing was changed.
type DedupeResult struct {
	Items     int           `json:"items"` // live items compared
	Pairs     int           `json:"pairs"` // near-duplicate pairs found
	Groups    int           `json:"groups"`
	Threshold float64       `json:"threshold"`
	Method    string        `json:"method"`
	List      []DedupeGroup `json:"list"`
}

// Dedupe reports groups of near-duplicate live chunks without changing
// anything. Method: the normalized text (dedup.Normalize) is cut into word
// 3-shingles (a text of fewer words is one shingle); a 64-value MinHash
// signature per item, split into 16 bands of 4, gives candidate pairs
// (items sharing a band), which are kept when their exact shingle Jaccard
// similarity reaches the threshold; groups are the connected components.
// Deterministic: fixed hash seeds, groups ordered by size, then oldest
// member.
func (s *Store) Dedupe(ctx context.Context, req DedupeRequest) (*DedupeResult, error) {
	th := req.Threshold
	if th == 0 {
		th = DefaultDedupeThreshold
	}
	if th < 0 || th > 1 {
		return nil, badRequest("threshold %v: want a similarity in (0, 1]", req.Threshold)
	}
	if req.Limit < 0 {
		return nil, badRequest("limit %d: want 0 (all) or more", req.Limit)
	}
	for _, k := range req.Kinds {
		switch k {
		case "conversation", "document", "knowledge", "tool_call", "profile":
		default:
			return nil, fmt.Errorf("unknown kind %q: %w", k, ErrBadRequest)
		}
	}
	var res *DedupeResult
	err := s.readProj(ctx, req.Progress, func(set *projstd.Set, _ bool) error {
		var err error
		res, err = dedupeOn(ctx, set, req, th)
		return err
	})
	return res, err
}

// dedupeOn is Dedupe over a set at the log head.
func dedupeOn(ctx context.Context, set *projstd.Set, req DedupeRequest, th float64) (*DedupeResult, error) {
	if set.Dedup == nil {
		return nil, fmt.Errorf("dedupe: the dedup projection is not open")
	}
	keep := index.Filter(req.Sessions, req.Kinds, 0, 0)
	var items []dedup.Item
	if err := set.Dedup.Each(func(it dedup.Item) error {
		if keep(it) {
			items = append(items, it)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("dedupe: %w", err)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Seq < items[j].Seq })
	chunks := make([]timelines.Chunk, len(items))
	sets := make([]map[uint64]bool, len(items))
	sigs := make([][]uint64, len(items))
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, ok, err := set.Timelines.Chunk(it.ChunkID)
		if err != nil {
			return nil, fmt.Errorf("dedupe: %w", err)
		}
		if !ok {
			return nil, fmt.Errorf("dedupe: chunk %s: in the dedup projection, not in timelines", it.ChunkID)
		}
		chunks[i] = c
		sets[i] = shingles(c.Content)
		sigs[i] = minhash(sets[i])
	}
	// LSH: items sharing one band's values are candidates.
	parent := make([]int, len(items))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	minSim := map[[2]int]float64{}
	pairs := 0
	checked := map[[2]int]bool{}
	for band := 0; band < dedupeBands; band++ {
		buckets := map[string][]int{}
		for i, sig := range sigs {
			var k []byte
			for _, v := range sig[band*dedupeRows : (band+1)*dedupeRows] {
				k = binary.BigEndian.AppendUint64(k, v)
			}
			buckets[string(k)] = append(buckets[string(k)], i)
		}
		keys := make([]string, 0, len(buckets))
		for k := range buckets {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b := buckets[k]
			for x := 0; x < len(b); x++ {
				for y := x + 1; y < len(b); y++ {
					p := [2]int{b[x], b[y]}
					if checked[p] {
						continue
					}
					checked[p] = true
					sim := jaccard(sets[p[0]], sets[p[1]])
					if sim < th {
						continue
					}
					pairs++
					minSim[p] = sim
					if ra, rb := find(p[0]), find(p[1]); ra != rb {
						parent[max(ra, rb)] = min(ra, rb)
					}
				}
			}
		}
	}
	comp := map[int][]int{}
	for i := range items {
		comp[find(i)] = append(comp[find(i)], i)
	}
	groupMin := map[int]float64{}
	for p, sim := range minSim {
		r := find(p[0])
		if m, ok := groupMin[r]; !ok || sim < m {
			groupMin[r] = sim
		}
	}
	res := &DedupeResult{Items: len(items), Pairs: pairs, Threshold: th, List: []DedupeGroup{},
		Method: fmt.Sprintf("minhash: word %d-shingles of the normalized text, %d bands x %d rows, exact Jaccard >= %.2f", dedupeShingle, dedupeBands, dedupeRows, th)}
	var roots []int
	for r, ms := range comp {
		if len(ms) > 1 {
			roots = append(roots, r)
		}
	}
	sort.Slice(roots, func(i, j int) bool {
		a, b := comp[roots[i]], comp[roots[j]]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a[0] < b[0]
	})
	res.Groups = len(roots)
	for gi, r := range roots {
		if req.Limit > 0 && gi >= req.Limit {
			break
		}
		ms := comp[r]
		g := DedupeGroup{MinSimilarity: groupMin[r], Exact: true}
		h0 := dedup.Hash(chunks[ms[0]].Content)
		for _, i := range ms {
			c := chunks[i]
			g.Members = append(g.Members, DedupeMember{ID: c.ID, Seq: c.Seq, Time: time.UnixMilli(c.Time).UTC().Format(time.RFC3339),
				Session: c.Session, Role: c.Role, Kind: c.Kind.String(), Snippet: index.Snippet(c.Content)})
			if dedup.Hash(c.Content) != h0 {
				g.Exact = false
			}
		}
		res.List = append(res.List, g)
	}
	return res, nil
}

// shingles returns the hashed word shingles of the normalized text.
func shingles(text string) map[uint64]bool {
	words := strings.Fields(dedup.Normalize(text))
	out := map[uint64]bool{}
	h := func(ws []string) uint64 {
		f := fnv.New64a()
		f.Write([]byte(strings.Join(ws, " ")))
		return f.Sum64()
	}
	if len(words) < dedupeShingle {
		out[h(words)] = true
		return out
	}
	for i := 0; i+dedupeShingle <= len(words); i++ {
		out[h(words[i:i+dedupeShingle])] = true
	}
	return out
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func minhash(set map[uint64]bool) []uint64 {
	sig := make([]uint64, dedupeBands*dedupeRows)
	for i := range sig {
		sig[i] = ^uint64(0)
	}
	for sh := range set {
		for i := range sig {
			if v := splitmix(sh ^ splitmix(uint64(i+1))); v < sig[i] {
				sig[i] = v
			}
		}
	}
	return sig
}

func jaccard(a, b map[uint64]bool) float64 {
	if len(a) > len(b) {
		a, b = b, a
	}
	inter := 0
	for k := range a {
		if b[k] {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}
