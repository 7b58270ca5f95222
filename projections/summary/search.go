package summary

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/projections"
)

// BM25 parameters of the session search.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// keyTermBoost is how many extra occurrences a key term counts for.
	keyTermBoost = 2
	// maxTermKey is the longest term stored as itself; longer ones are
	// stored by their SHA-256 (bbolt keys are bounded).
	maxTermKey = 256
)

// The session search index is stored, so that a Search reads the postings
// of its words and the lengths of their sessions instead of every summary
// (at 1M events, rebuilding it in memory cost 730 ms per process). It is a
// function of the set of session summaries, not of the update history:
//   - search_docs: sessHash(id) (4, BE) ‖ session id → uvarint length (the
//     BM25 document length: content words of the text plus keyTermBoost per
//     key term);
//   - search_terms: termKey(term) → postings, one per session whose
//     document holds the term, in (hash, id) order: uvarint(hash − previous
//     hash) ‖ uvarint(tf<<1 | named) ‖ [uvarint len ‖ session id when
//     named]. A session is named when another live session shares its
//     hash (rare: a 32-bit hash), otherwise the hash alone finds it in
//     search_docs; so a posting costs 3–6 bytes;
//   - meta search_stats: uvarint session count ‖ uvarint total length.
//
// Measured (BenchmarkColdSearch, open + one Search, sessions of 20 turns):
// 280 → 0.66 CPU ms at 5K sessions, 3,629 → 1.6 at 50K; at 12.5K sessions
// of ~380-byte turns (94 MB of input) the index takes 3 MB of pages. A
// Commit rewrites
// the postings lists of the terms whose frequency changed, whole: an
// appended exchange costs ~0.5 CPU ms more (BenchmarkAppendExchange).

var (
	bucketSearchDocs  = []byte("search_docs")
	bucketSearchTerms = []byte("search_terms")
	keySearchStats    = []byte("search_stats")
)

// sessHash is FNV-1a 32 of a session id (a variable: tests force
// collisions).
var sessHash = fnvHash

func fnvHash(id string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()
}

func docKey(h uint32, id string) []byte {
	k := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(id)), h)
	return append(k, id...)
}

// termKey is the stored key of a term.
func termKey(t string) []byte {
	if len(t) <= maxTermKey {
		return []byte(t)
	}
	s := sha256.Sum256([]byte(t))
	return append([]byte{0}, s[:]...)
}

// termFreqs is the BM25 document of a summary: its term frequencies and
// length.
func termFreqs(s *Summary) (map[string]int, int) {
	tf := map[string]int{}
	n := 0
	if s == nil {
		return tf, 0
	}
	for _, w := range textutil.AppendContentWords(nil, s.Text) {
		tf[w]++
		n++
	}
	for _, w := range s.KeyTerms {
		tf[w] += keyTermBoost
		n += keyTermBoost
	}
	return tf, n
}

// bm25Term is one term's contribution to a session's score.
func bm25Term(idf float64, tf, length int, avg float64) float64 {
	f := float64(tf)
	norm := f + bm25K1*(1-bm25B+bm25B*float64(length)/avg)
	return idf * f * (bm25K1 + 1) / norm
}

func bm25IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// rankHits sorts hits (of distinct sessions, in any order) by score, ties
// by session id, and keeps k.
//
// The order is total (sessions are distinct), so keeping the best k in a
// bounded heap gives the same k as sorting every scored session, without
// the sort (at 1M events a common word scores ~50K sessions: 9 ms).
func rankHits(hits []SessionHit, k int) []SessionHit {
	better := func(a, b SessionHit) bool {
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.Session < b.Session
	}
	k = max(k, 0)
	// h is a heap whose root is the worst hit kept.
	h := make([]SessionHit, 0, min(k, len(hits)))
	down := func(i int) {
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && better(h[w], h[l]) {
				w = l
			}
			if r < len(h) && better(h[w], h[r]) {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for _, x := range hits {
		switch {
		case len(h) < k:
			h = append(h, x)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !better(h[p], h[i]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
		case k > 0 && better(x, h[0]):
			h[0] = x
			down(0)
		}
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	return h
}

type posting struct {
	h     uint32
	id    string // named postings only
	tf    int
	named bool
}

func encodePostings(ps []posting) []byte {
	// Most postings take 2-3 bytes: sized once, not grown by doubling
	// (a commit re-encodes the lists of every term its sessions hold).
	b := make([]byte, 0, 3*len(ps)+8)
	var prev uint32
	for _, p := range ps {
		b = binary.AppendUvarint(b, uint64(p.h-prev))
		prev = p.h
		v := uint64(p.tf) << 1
		if p.named {
			v |= 1
		}
		b = binary.AppendUvarint(b, v)
		if p.named {
			b = appendStr(b, p.id)
		}
	}
	return b
}

func decodePostings(b []byte) ([]posting, error) {
	bad := func(what string) ([]posting, error) {
		return nil, fmt.Errorf("decode postings: %w: %s", ErrCorrupt, what)
	}
	// A posting takes at least 2 bytes.
	out := make([]posting, 0, len(b)/2)
	var h uint64
	for p := 0; p < len(b); {
		d, n := binary.Uvarint(b[p:])
		if n <= 0 || h+d > math.MaxUint32 {
			return bad("hash")
		}
		p += n
		h += d
		v, n := binary.Uvarint(b[p:])
		if n <= 0 || v>>1 == 0 || v>>1 > 1<<31 {
			return bad("tf")
		}
		p += n
		ps := posting{h: uint32(h), tf: int(v >> 1), named: v&1 == 1}
		if ps.named {
			l, n := binary.Uvarint(b[p:])
			if n <= 0 || l > uint64(len(b)-p-n) {
				return bad("session id")
			}
			p += n
			ps.id = string(b[p : p+int(l)])
			p += int(l)
		}
		if len(out) > 0 && d == 0 && (!ps.named || !out[len(out)-1].named || out[len(out)-1].id >= ps.id) {
			return bad("order")
		}
		out = append(out, ps)
	}
	return out, nil
}

// searchChange is one session whose document changes in a Commit (old ==
// new for a session whose hash group changes size).
type searchChange struct{ old, new *Summary }

func readStats(meta *bolt.Bucket) (n, total uint64, err error) {
	b := meta.Get(keySearchStats)
	if b == nil {
		return 0, 0, nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, 0, fmt.Errorf("search stats: %w", ErrCorrupt)
	}
	total, k2 := binary.Uvarint(b[k:])
	if k2 <= 0 || k+k2 != len(b) {
		return 0, 0, fmt.Errorf("search stats: %w", ErrCorrupt)
	}
	return n, total, nil
}

// groupOf lists the sessions stored under hash h.
func groupOf(docs *bolt.Bucket, h uint32) []string {
	var out []string
	p := binary.BigEndian.AppendUint32(nil, h)
	c := docs.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		out = append(out, string(k[4:]))
	}
	return out
}

// updateSearch brings the stored search index to the new summaries of the
// changed sessions: only the postings whose tf changes are rewritten.
func updateSearch(tx *bolt.Tx, changes map[string]*searchChange) error {
	if len(changes) == 0 {
		return nil
	}
	docs, terms, meta := tx.Bucket(bucketSearchDocs), tx.Bucket(bucketSearchTerms), tx.Bucket(bucketMeta)
	sums := tx.Bucket(bucketSummaries)
	ids := make([]string, 0, len(changes))
	for id := range changes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// Group sizes before and after; a session whose group crosses
	// between one and several members changes how it is named.
	before, after := map[uint32]int{}, map[uint32]int{}
	for _, id := range ids {
		h := sessHash(id)
		if _, ok := before[h]; ok {
			continue
		}
		members := groupOf(docs, h)
		before[h] = len(members)
		live := map[string]bool{}
		for _, m := range members {
			live[m] = true
		}
		for _, m := range ids {
			if sessHash(m) == h {
				live[m] = changes[m].new != nil
			}
		}
		n := 0
		for _, v := range live {
			if v {
				n++
			}
		}
		after[h] = n
		if (before[h] >= 2) != (n >= 2) {
			for _, m := range members {
				if changes[m] != nil {
					continue
				}
				var s Summary
				raw := sums.Get(append([]byte{prefixSession}, m...))
				if raw == nil {
					return fmt.Errorf("search session %q: %w: no summary", m, ErrCorrupt)
				}
				if err := decodeSummary(raw, &s); err != nil {
					return err
				}
				changes[m] = &searchChange{old: &s, new: &s}
			}
		}
	}
	ids = ids[:0]
	for id := range changes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	type termOps struct{ del, add []posting }
	ops := map[string]*termOps{}
	op := func(t string) *termOps {
		o := ops[t]
		if o == nil {
			o = &termOps{}
			ops[t] = o
		}
		return o
	}
	n, total, err := readStats(meta)
	if err != nil {
		return err
	}
	for _, id := range ids {
		ch := changes[id]
		h := sessHash(id)
		oldNamed, newNamed := before[h] >= 2, after[h] >= 2
		oldTF, oldLen := termFreqs(ch.old)
		newTF, newLen := termFreqs(ch.new)
		all := oldNamed != newNamed
		for t, c := range oldTF {
			if all || newTF[t] != c {
				op(t).del = append(op(t).del, posting{h: h, id: id, named: oldNamed})
			}
		}
		for t, c := range newTF {
			if all || oldTF[t] != c {
				op(t).add = append(op(t).add, posting{h: h, id: id, tf: c, named: newNamed})
			}
		}
		if ch.old != nil {
			if err := docs.Delete(docKey(h, id)); err != nil {
				return err
			}
			n--
			total -= uint64(oldLen)
		}
		if ch.new != nil {
			if err := docs.Put(docKey(h, id), binary.AppendUvarint(nil, uint64(newLen))); err != nil {
				return err
			}
			n++
			total += uint64(newLen)
		}
	}
	ts := make([]string, 0, len(ops))
	for t := range ops {
		if t != "" { // no query word is empty: it only counts in the length
			ts = append(ts, t)
		}
	}
	sort.Strings(ts)
	for _, t := range ts {
		key := termKey(t)
		ps, err := decodePostings(terms.Get(key))
		if err != nil {
			return fmt.Errorf("term %q: %w", t, err)
		}
		for _, d := range ops[t].del {
			i := sort.Search(len(ps), func(i int) bool { return ps[i].h >= d.h })
			for ; i < len(ps) && ps[i].h == d.h; i++ {
				if ps[i].named == d.named && (!d.named || ps[i].id == d.id) {
					break
				}
			}
			if i == len(ps) || ps[i].h != d.h {
				return fmt.Errorf("term %q: %w: no posting of session %q", t, ErrCorrupt, d.id)
			}
			ps = append(ps[:i], ps[i+1:]...)
		}
		adds := ops[t].add
		for i := range adds {
			if !adds[i].named {
				adds[i].id = ""
			}
		}
		ps = mergePostings(ps, adds)
		if len(ps) == 0 {
			if err := terms.Delete(key); err != nil {
				return err
			}
		} else if err := terms.Put(key, encodePostings(ps)); err != nil {
			return err
		}
	}
	if n == 0 {
		return meta.Delete(keySearchStats)
	}
	return meta.Put(keySearchStats, binary.AppendUvarint(binary.AppendUvarint(nil, n), total))
}

// postingLess is the order of a term's postings: by session hash, then
// id (a hash's postings are one unnamed or several named: no two equal).
func postingLess(a, b posting) bool {
	if a.h != b.h {
		return a.h < b.h
	}
	return a.id < b.id
}

// mergePostings returns ps (in order) with adds merged in, in order. A
// commit adds a few postings to lists that grow with the store: sorting
// the whole list each time cost more than the rest of the update.
func mergePostings(ps, adds []posting) []posting {
	if len(adds) == 0 {
		return ps
	}
	sort.Slice(adds, func(i, j int) bool { return postingLess(adds[i], adds[j]) })
	out := make([]posting, 0, len(ps)+len(adds))
	i, j := 0, 0
	for i < len(ps) && j < len(adds) {
		if postingLess(adds[j], ps[i]) {
			out = append(out, adds[j])
			j++
		} else {
			out = append(out, ps[i])
			i++
		}
	}
	out = append(out, ps[i:]...)
	return append(out, adds[j:]...)
}

// searchStored scores sessions for the words from the stored index: the
// same BM25 as over the summaries themselves (per session, terms added in
// the words' order), so scores are identical bit for bit.
//
// Postings are sorted by hash and search_docs by hash then session, so
// the sessions of the postings are found by walking both in order, and
// scores sit in a slice beside the sessions: a common word of a large
// store has a posting in most sessions, and maps keyed by hash and by
// session were most of a search's cost (16 of a 130 ms vector query
// process at a million events, 50K sessions).
func searchStored(tx *bolt.Tx, words []string, k int) ([]SessionHit, error) {
	n, total, err := readStats(tx.Bucket(bucketMeta))
	if err != nil {
		return nil, err
	}
	if n == 0 || len(words) == 0 {
		return nil, nil
	}
	avg := float64(total) / float64(n)
	if avg == 0 {
		avg = 1
	}
	terms, docs := tx.Bucket(bucketSearchTerms), tx.Bucket(bucketSearchDocs)
	seen := map[string]bool{}
	var lists [][]posting
	var need []uint32 // the hashes of the postings, ascending, once each
	for _, w := range words {
		if seen[w] || w == "" {
			continue
		}
		seen[w] = true
		ps, err := decodePostings(terms.Get(termKey(w)))
		if err != nil {
			return nil, fmt.Errorf("term %q: %w", w, err)
		}
		if len(ps) == 0 {
			continue
		}
		lists = append(lists, ps)
		need = mergeHashes(need, ps)
	}
	if len(lists) == 0 {
		return nil, nil
	}
	// The sessions (ids and lengths) of the hashes, in key order (hash,
	// then session): one pass over search_docs when they are many, else a
	// seek each. Group g is docs[start[g]:start[g+1]], of hash hashes[g].
	type doc struct {
		id     string
		length int
	}
	var (
		ds     []doc
		hashes []uint32
		start  []int
	)
	add := func(k, v []byte) error {
		if len(k) < 4 {
			return fmt.Errorf("search doc key %x: %w", k, ErrCorrupt)
		}
		l, m := binary.Uvarint(v)
		if m <= 0 || m != len(v) || l > 1<<40 {
			return fmt.Errorf("search doc %q: %w", k[4:], ErrCorrupt)
		}
		h := binary.BigEndian.Uint32(k)
		if len(hashes) == 0 || hashes[len(hashes)-1] != h {
			hashes, start = append(hashes, h), append(start, len(ds))
		}
		ds = append(ds, doc{string(k[4:]), int(l)})
		return nil
	}
	c := docs.Cursor()
	if uint64(len(need))*16 > n {
		i := 0
		for k, v := c.First(); k != nil && i < len(need); k, v = c.Next() {
			if len(k) < 4 {
				continue
			}
			h := binary.BigEndian.Uint32(k)
			for i < len(need) && need[i] < h {
				i++
			}
			if i < len(need) && need[i] == h {
				if err := add(k, v); err != nil {
					return nil, err
				}
			}
		}
	} else {
		for _, h := range need {
			p := binary.BigEndian.AppendUint32(nil, h)
			for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				if err := add(k, v); err != nil {
					return nil, err
				}
			}
		}
	}
	start = append(start, len(ds))
	scores := make([]float64, len(ds))
	scored := make([]bool, len(ds))
	for _, ps := range lists {
		idf := bm25IDF(int(n), len(ps))
		gi := 0
		for _, p := range ps {
			for gi < len(hashes) && hashes[gi] < p.h {
				gi++
			}
			d := -1
			if gi < len(hashes) && hashes[gi] == p.h {
				g := ds[start[gi]:start[gi+1]]
				for i := range g {
					if !p.named && len(g) == 1 || p.named && g[i].id == p.id {
						d = start[gi] + i
						break
					}
				}
			}
			if d < 0 {
				return nil, fmt.Errorf("posting of hash %08x: %w: no session", p.h, ErrCorrupt)
			}
			scores[d] += bm25Term(idf, p.tf, ds[d].length, avg)
			scored[d] = true
		}
	}
	hits := make([]SessionHit, 0, len(ds))
	for i, ok := range scored {
		if ok {
			hits = append(hits, SessionHit{Session: ds[i].id, Score: scores[i]})
		}
	}
	return rankHits(hits, k), nil
}

// mergeHashes returns the ascending hashes of a (ascending, once each)
// and of ps (sorted by hash, as stored), once each.
func mergeHashes(a []uint32, ps []posting) []uint32 {
	out := make([]uint32, 0, len(a)+len(ps))
	i := 0
	for _, p := range ps {
		for i < len(a) && a[i] < p.h {
			out = append(out, a[i])
			i++
		}
		if i < len(a) && a[i] == p.h {
			i++
		}
		if len(out) == 0 || out[len(out)-1] != p.h {
			out = append(out, p.h)
		}
	}
	return append(out, a[i:]...)
}

// keySearchStale (meta) marks a search index left behind the summaries by
// the commits of a bulk build (Index.BeginBulk); rebuildSearch clears it.
var keySearchStale = []byte("search_stale")

// rebuildSearch builds the session search index anew from the stored
// session summaries: the same records updateSearch keeps, in one pass
// (a bulk build defers them to here: updating them at every commit
// rewrote the whole postings list of every term its sessions hold).
func rebuildSearch(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketSearchDocs, bucketSearchTerms} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	// The deletes read every page of the old index, and the scan below
	// every summary: the pages read leave the resident set as it goes (a
	// 2M-chunk build's ~130 MB), as writeChunks explains.
	projections.DropResident(tx.DB(), tx.Size())
	docs, terms, meta := tx.Bucket(bucketSearchDocs), tx.Bucket(bucketSearchTerms), tx.Bucket(bucketMeta)
	// A compact posting while building: the session by its index in ids.
	type entry struct {
		h, tf uint32
		sess  int32
	}
	type doc struct {
		h    uint32
		id   string
		len  int
		sess int32 // its index in ids
	}
	var ds []doc
	var ids []string // the sessions in key order, as entry.sess names them
	byTerm := map[string][]entry{}
	var total uint64
	c := tx.Bucket(bucketSummaries).Cursor()
	pfx := []byte{prefixSession}
	read := 0
	for k, v := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, v = c.Next() {
		if read++; read%settleDropEvery == 0 {
			projections.DropResident(tx.DB(), tx.Size())
		}
		var s Summary
		if err := decodeSummary(v, &s); err != nil {
			return fmt.Errorf("summary %q: %w", k[1:], err)
		}
		id := string(k[1:])
		h := sessHash(id)
		tf, n := termFreqs(&s)
		if len(ids) >= math.MaxInt32 {
			return fmt.Errorf("search index: %d sessions: too many", len(ids))
		}
		for t, c := range tf {
			if t != "" { // no query word is empty: it only counts in the length
				byTerm[t] = append(byTerm[t], entry{h: h, tf: uint32(c), sess: int32(len(ids))})
			}
		}
		ds = append(ds, doc{h: h, id: id, len: n, sess: int32(len(ids))})
		ids = append(ids, id)
		total += uint64(n)
	}
	group := make(map[uint32]int, len(ds))
	for _, d := range ds {
		group[d.h]++
	}
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].h != ds[j].h {
			return ds[i].h < ds[j].h
		}
		return ds[i].id < ds[j].id
	})
	// A session's place in (hash, id) order, the order of every postings
	// list (postingLess).
	rank := make([]int32, len(ids))
	for r, d := range ds {
		rank[d.sess] = int32(r)
		if err := docs.Put(docKey(d.h, d.id), binary.AppendUvarint(nil, uint64(d.len))); err != nil {
			return err
		}
	}
	// Terms in key order (a long term's key is its hash), each list in
	// (hash, id) order.
	type termRef struct {
		key []byte
		t   string
	}
	ts := make([]termRef, 0, len(byTerm))
	for t := range byTerm {
		ts = append(ts, termRef{termKey(t), t})
	}
	sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i].key, ts[j].key) < 0 })
	var ps []posting
	for _, tr := range ts {
		es := byTerm[tr.t]
		// In postingLess's order by the sessions' ranks: comparing two
		// integers, not hashes and ids (that sort was a quarter of the
		// rebuild).
		slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(rank[a.sess], rank[b.sess]) })
		ps = ps[:0]
		for _, e := range es {
			p := posting{h: e.h, tf: int(e.tf), named: group[e.h] >= 2}
			if p.named {
				p.id = ids[e.sess]
			}
			ps = append(ps, p)
		}
		if err := terms.Put(tr.key, encodePostings(ps)); err != nil {
			return err
		}
		delete(byTerm, tr.t)
	}
	if err := meta.Delete(keySearchStale); err != nil {
		return err
	}
	if len(ds) == 0 {
		return meta.Delete(keySearchStats)
	}
	return meta.Put(keySearchStats, binary.AppendUvarint(binary.AppendUvarint(nil, uint64(len(ds))), total))
}
