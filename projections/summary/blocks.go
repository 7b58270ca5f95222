package summary

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// blockSpread is the expected number of chunks per block: a chunk starts a
// block when FNV-1a-32 of its id is 0 modulo blockSpread. Part of the
// format: changing it changes summaries and must bump FormatVersion.
const blockSpread = 16

// startsBlock reports whether chunk id opens a block.
func startsBlock(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%blockSpread == 0
}

// sortKeyLen is the length of the order part of a group index key.
const sortKeyLen = 12

// orderKey is the group index key of c in group g: lenPrefix(group id) ‖
// sort key ‖ chunk id, so that a cursor walks the group in reading order
// (sessions: time, index, id; documents: index, time, id).
func orderKey(g groupKey, c *chunk) []byte {
	k := lenPrefix(g.id)
	tk := timeKey(c.time)
	if g.prefix == prefixDocument {
		k = binary.BigEndian.AppendUint32(k, uint32(c.index))
		k = append(k, tk[:]...)
	} else {
		k = append(k, tk[:]...)
		k = binary.BigEndian.AppendUint32(k, uint32(c.index))
	}
	return append(k, c.id...)
}

// groupsOf are the groups c belongs to.
func groupsOf(c *chunk) []groupKey {
	var gs []groupKey
	if c.session != "" {
		gs = append(gs, groupKey{prefixSession, c.session})
	}
	if d := c.docID(); d != "" {
		gs = append(gs, groupKey{prefixDocument, d})
	}
	return gs
}

// idOfKey is the chunk id at the end of a group index key with prefix gp.
func idOfKey(gp, k []byte) string { return string(k[len(gp)+sortKeyLen:]) }

// block is the stored digest of one block of a group: enough to merge the
// group's summary without reading its chunks.
type block struct {
	chunks, sents int
	first, last   int64    // content time span
	session       string   // session of the block's first chunk
	cands         []cand   // candidate sentences, in reading order
	terms         []string // candidate key terms
}

// cand is a candidate sentence of a block.
type cand struct {
	local int // position among the block's sentences
	text  string
	words []string
}

// newBlock summarises the chunks of one block (in reading order): the
// candidates are the sentences the block's own summary takes (or its best
// sentence when none fits), the candidate key terms its own key terms.
func newBlock(cs []*chunk, opts Options) *block {
	b := &block{chunks: len(cs), first: cs[0].time, last: cs[0].time, session: cs[0].session}
	var sents []sentence
	for _, c := range cs {
		for _, st := range c.sents {
			st.pos = len(sents)
			sents = append(sents, st)
		}
		b.first, b.last = min(b.first, c.time), max(b.last, c.time)
	}
	b.sents = len(sents)
	ex := summarize(sents, opts.MaxTokens, opts.KeyTerms)
	b.terms = ex.keyTerms
	if len(sents) == 0 {
		return b
	}
	taken := false
	for i, ok := range ex.chosen {
		if ok {
			b.cands = append(b.cands, cand{local: i, text: sents[i].text, words: sents[i].words})
			taken = true
		}
	}
	if !taken {
		b.cands = []cand{{local: ex.best, text: sents[ex.best].text, words: sents[ex.best].words}}
	}
	return b
}

// encodeBlock: uvarint chunks ‖ uvarint sentences ‖ first(8, BE) ‖
// last(8, BE) ‖ str session ‖ uvarint #candidates ‖ per candidate (uvarint
// local position, str text, str content words joined by " ") ‖ uvarint
// #terms ‖ str term….
func encodeBlock(b *block) []byte {
	out := binary.AppendUvarint(nil, uint64(b.chunks))
	out = binary.AppendUvarint(out, uint64(b.sents))
	out = binary.BigEndian.AppendUint64(out, uint64(b.first))
	out = binary.BigEndian.AppendUint64(out, uint64(b.last))
	out = appendStr(out, b.session)
	out = binary.AppendUvarint(out, uint64(len(b.cands)))
	for _, c := range b.cands {
		out = binary.AppendUvarint(out, uint64(c.local))
		out = appendStr(out, c.text)
		out = appendStr(out, strings.Join(c.words, " "))
	}
	out = binary.AppendUvarint(out, uint64(len(b.terms)))
	for _, t := range b.terms {
		out = appendStr(out, t)
	}
	return out
}

// decodeBlock parses a stored block record.
func decodeBlock(raw []byte) (*block, error) {
	bad := func(what string) (*block, error) {
		return nil, fmt.Errorf("decode block: %w: %s", ErrCorrupt, what)
	}
	rec := string(raw)
	p := 0
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(raw[p:])
		if n <= 0 {
			return 0, false
		}
		p += n
		return v, true
	}
	str := func() (string, bool) {
		l, ok := uv()
		if !ok || l > uint64(len(rec)-p) {
			return "", false
		}
		s := rec[p : p+int(l)]
		p += int(l)
		return s, true
	}
	b := &block{}
	chunks, ok1 := uv()
	sents, ok2 := uv()
	if !ok1 || !ok2 || chunks > 1<<31 || sents > 1<<31 {
		return bad("counts")
	}
	b.chunks, b.sents = int(chunks), int(sents)
	if len(rec)-p < 16 {
		return bad("times")
	}
	b.first = int64(binary.BigEndian.Uint64(raw[p:]))
	b.last = int64(binary.BigEndian.Uint64(raw[p+8:]))
	p += 16
	var ok bool
	if b.session, ok = str(); !ok {
		return bad("session")
	}
	n, ok := uv()
	if !ok || n > uint64(len(rec)-p) {
		return bad("candidate count")
	}
	b.cands = make([]cand, n)
	for i := range b.cands {
		local, ok1 := uv()
		text, ok2 := str()
		words, ok3 := str()
		if !ok1 || !ok2 || !ok3 || local >= sents {
			return bad("candidate")
		}
		b.cands[i] = cand{local: int(local), text: text}
		if words != "" {
			b.cands[i].words = strings.Split(words, " ")
		}
	}
	if n, ok = uv(); !ok || n > uint64(len(rec)-p) {
		return bad("term count")
	}
	b.terms = make([]string, n)
	for i := range b.terms {
		if b.terms[i], ok = str(); !ok {
			return bad("term")
		}
	}
	if p != len(rec) {
		return bad("trailing bytes")
	}
	return b, nil
}

// statsKey is the key of word's statistics in group g.
func statsKey(g groupKey, word string) []byte {
	k := append([]byte{g.prefix}, lenPrefix(g.id)...)
	return append(k, word...)
}

// statDelta accumulates the change of one group's term statistics.
type statDelta map[string]*termStat

// add counts c's sentences into d with sign ±1.
func (d statDelta) add(c *chunk, sign int) {
	for _, u := range distinctWords(c.sents) {
		for _, w := range u {
			st := d[w]
			if st == nil {
				st = &termStat{}
				d[w] = st
			}
			st.df += sign
		}
	}
	for _, s := range c.sents {
		for _, w := range s.words {
			d[w].count += sign
		}
	}
}

// applyStats writes d into the stats bucket.
func applyStats(stats *bolt.Bucket, g groupKey, d statDelta) error {
	words := make([]string, 0, len(d))
	for w := range d {
		words = append(words, w)
	}
	sort.Strings(words)
	for _, w := range words {
		st := d[w]
		if st.count == 0 && st.df == 0 {
			continue
		}
		key := statsKey(g, w)
		cur, err := decodeStat(stats.Get(key))
		if err != nil {
			return fmt.Errorf("term %q: %w", w, err)
		}
		cur.count += st.count
		cur.df += st.df
		switch {
		case cur.count < 0 || cur.df < 0 || (cur.count == 0) != (cur.df == 0):
			return fmt.Errorf("term %q: %w: negative statistics", w, ErrCorrupt)
		case cur.count == 0:
			err = stats.Delete(key)
		default:
			err = stats.Put(key, binary.AppendUvarint(binary.AppendUvarint(nil, uint64(cur.count)), uint64(cur.df)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeStat parses uvarint count ‖ uvarint df (nil: zero).
func decodeStat(raw []byte) (termStat, error) {
	if raw == nil {
		return termStat{}, nil
	}
	c, n := binary.Uvarint(raw)
	if n <= 0 || c > 1<<40 {
		return termStat{}, fmt.Errorf("%w: term count", ErrCorrupt)
	}
	df, m := binary.Uvarint(raw[n:])
	if m <= 0 || n+m != len(raw) || df > c || df == 0 {
		return termStat{}, fmt.Errorf("%w: term df", ErrCorrupt)
	}
	return termStat{int(c), int(df)}, nil
}

// rebuildBlocks recomputes the blocks of group g that the changes between
// index keys lo and hi (inclusive, both states) can reach: from the last
// block start before lo to the first block start after hi. Keys outside
// [lo, hi] are the same before and after the change, so blocks outside
// that range are unchanged.
// It returns the number of chunks it read.
func rebuildBlocks(tx *bolt.Tx, g groupKey, lo, hi []byte, opts Options) (int, error) {
	idx := tx.Bucket(bucketBySession)
	if g.prefix == prefixDocument {
		idx = tx.Bucket(bucketByDoc)
	}
	gp := lenPrefix(g.id)
	c := idx.Cursor()
	start := gp // group start
	k, _ := c.Seek(lo)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, gp); k, _ = c.Prev() {
		if startsBlock(idOfKey(gp, k)) {
			start = append([]byte(nil), k...)
			break
		}
	}
	var end []byte // nil: group end
	for k, _ = c.Seek(hi); k != nil && bytes.HasPrefix(k, gp); k, _ = c.Next() {
		if bytes.Compare(k, hi) > 0 && startsBlock(idOfKey(gp, k)) {
			end = append([]byte(nil), k...)
			break
		}
	}
	within := func(k []byte) bool {
		return k != nil && bytes.HasPrefix(k, gp) && (end == nil || bytes.Compare(k, end) < 0)
	}

	blocks := tx.Bucket(bucketBlocks)
	var stale [][]byte
	bc := blocks.Cursor()
	for bk, _ := bc.Seek(append([]byte{g.prefix}, start...)); bk != nil && bk[0] == g.prefix && within(bk[1:]); bk, _ = bc.Next() {
		stale = append(stale, append([]byte(nil), bk...))
	}
	for _, bk := range stale {
		if err := blocks.Delete(bk); err != nil {
			return 0, err
		}
	}

	chunks := tx.Bucket(bucketChunks)
	var cur []*chunk
	read := 0
	var curKey []byte
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		err := blocks.Put(append([]byte{g.prefix}, curKey...), encodeBlock(newBlock(cur, opts)))
		cur = cur[:0]
		return err
	}
	for k, _ = c.Seek(start); within(k); k, _ = c.Next() {
		id := idOfKey(gp, k)
		if len(cur) > 0 && startsBlock(id) {
			if err := flush(); err != nil {
				return read, err
			}
		}
		ch, err := decodeChunk(id, chunks.Get([]byte(id)))
		if err != nil {
			return read, err
		}
		read++
		if len(cur) == 0 {
			curKey = append([]byte(nil), k...)
		}
		cur = append(cur, ch)
	}
	return read, flush()
}

// merge is the summary of group g from its stored blocks; nil when the
// group has no live chunk. Candidate sentences are rescored with the
// group's term statistics and selected as in summarize; the key terms are
// the heaviest of the blocks' candidate terms.
func merge(tx *bolt.Tx, g groupKey, opts Options) (*Summary, error) {
	bp := append([]byte{g.prefix}, lenPrefix(g.id)...)
	var bs []*block
	c := tx.Bucket(bucketBlocks).Cursor()
	for k, v := c.Seek(bp); k != nil && bytes.HasPrefix(k, bp); k, v = c.Next() {
		b, err := decodeBlock(v)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", g.id, err)
		}
		bs = append(bs, b)
	}
	if len(bs) == 0 {
		return nil, nil
	}
	s := &Summary{Kind: KindSession, ID: g.id, First: bs[0].first, Last: bs[0].last}
	if g.prefix == prefixDocument {
		s.Kind = KindDocument
		s.Session = bs[0].session
	}
	n := 0
	var sents []sentence
	firstIsCand := false
	termSet := map[string]struct{}{}
	for i, b := range bs {
		s.Chunks += b.chunks
		n += b.sents
		s.First, s.Last = min(s.First, b.first), max(s.Last, b.last)
		for _, cd := range b.cands {
			if i == 0 && cd.local == 0 {
				firstIsCand = true
			}
			sents = append(sents, sentence{text: cd.text, words: cd.words, pos: len(sents)})
		}
		for _, t := range b.terms {
			termSet[t] = struct{}{}
		}
	}
	stats := tx.Bucket(bucketStats)
	weights := map[string]float64{}
	weigh := func(w string) error {
		if _, ok := weights[w]; ok {
			return nil
		}
		st, err := decodeStat(stats.Get(statsKey(g, w)))
		if err != nil {
			return fmt.Errorf("group %q term %q: %w", g.id, w, err)
		}
		if st.df == 0 {
			return fmt.Errorf("group %q term %q: %w: no statistics", g.id, w, ErrCorrupt)
		}
		weights[w] = termWeight(st.count, st.df, n)
		return nil
	}
	terms := make([]string, 0, len(termSet))
	for t := range termSet {
		if err := weigh(t); err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	s.KeyTerms = topTerms(terms, weights, opts.KeyTerms)
	uniq := distinctWords(sents)
	for _, u := range uniq {
		for _, w := range u {
			if err := weigh(w); err != nil {
				return nil, err
			}
		}
	}
	if len(sents) > 0 {
		chosen, nChosen, best := pick(sents, uniq, weights, firstIsCand, opts.MaxTokens)
		s.Text = join(sents, chosen)
		if nChosen == 0 {
			s.Text = cut(sents[best].text, opts.MaxTokens)
		}
	}
	s.Tokens = textutil.EstimateTokens(s.Text)
	return s, nil
}
