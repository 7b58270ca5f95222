package summary

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/projections"
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
// sort key ‖ projections.IDKey(chunk id), so that a cursor walks the group
// in reading order (sessions: time, index, id; documents: index, time, id;
// ids compare by their stored key).
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
	return append(k, projections.IDKey(c.id)...)
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
func idOfKey(gp, k []byte) (string, error) {
	if len(k) >= len(gp)+sortKeyLen {
		if id, ok := projections.IDOfKey(k[len(gp)+sortKeyLen:]); ok {
			return id, nil
		}
	}
	return "", fmt.Errorf("group index key %x: %w", k, ErrCorrupt)
}

// startsBlockAt reports whether the chunk of group index key k (prefix
// gp) opens a block.
func startsBlockAt(gp, k []byte) (bool, error) {
	id, err := idOfKey(gp, k)
	return err == nil && startsBlock(id), err
}

// block is the stored digest of one block of a group: enough to merge the
// group's summary without reading its chunks.
type block struct {
	chunks, sents int
	first, last   int64       // content time span
	session       string      // session of the block's first chunk
	cands         []cand      // candidate sentences, in reading order
	terms         []blockTerm // the block's key terms
}

// blockTerm is a key term of a block with its count and df there.
type blockTerm struct {
	word      string
	count, df int
}

// cand is a candidate sentence of a block. Its content words are not
// stored: merge derives them from the text.
type cand struct {
	local int // position among the block's sentences
	text  string
}

// newBlock summarises the chunks of one block (in reading order): the
// candidates are the sentences the block's own summary takes (or its best
// sentence when none fits), the candidate key terms its own key terms.
func newBlock(cs []*chunk, opts Options) *block {
	b := &block{chunks: len(cs), first: cs[0].time, last: cs[0].time, session: cs[0].session}
	n := 0
	for _, c := range cs {
		n += len(c.sents)
	}
	sents := make([]sentence, 0, n)
	for _, c := range cs {
		for _, st := range c.sents {
			st.pos = len(sents)
			sents = append(sents, st)
		}
		b.first, b.last = min(b.first, c.time), max(b.last, c.time)
	}
	b.sents = len(sents)
	ex := summarize(sents, opts.MaxTokens, opts.KeyTerms)
	if len(sents) == 0 {
		return b
	}
	for i, w := range ex.keyTerms {
		st := ex.keyStats[i]
		b.terms = append(b.terms, blockTerm{w, st.count, st.df})
	}
	taken := false
	for i, ok := range ex.chosen {
		if ok {
			b.cands = append(b.cands, cand{local: i, text: sents[i].text})
			taken = true
		}
	}
	if !taken {
		b.cands = []cand{{local: ex.best, text: sents[ex.best].text}}
	}
	return b
}

// encodeBlock: uvarint chunks ‖ uvarint sentences ‖ first(8, BE) ‖
// last(8, BE) ‖ str session ‖ uvarint #candidates ‖ per candidate (uvarint
// local position, str text) ‖ uvarint
// #terms ‖ per term (str term, uvarint count, uvarint df).
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
	}
	out = binary.AppendUvarint(out, uint64(len(b.terms)))
	for _, t := range b.terms {
		out = appendStr(out, t.word)
		out = binary.AppendUvarint(out, uint64(t.count))
		out = binary.AppendUvarint(out, uint64(t.df))
	}
	return out
}

// decodeBlock parses a stored block record.
func decodeBlock(raw []byte) (*block, error) {
	bad := func(what string) (*block, error) {
		return nil, fmt.Errorf("decode block: %w: %s", ErrCorrupt, what)
	}
	r := newFieldReader(raw, 0)
	b := &block{}
	chunks, ok1 := r.uvarint()
	sents, ok2 := r.uvarint()
	if !ok1 || !ok2 || chunks > 1<<31 || sents > 1<<31 {
		return bad("counts")
	}
	b.chunks, b.sents = int(chunks), int(sents)
	if r.left() < 16 {
		return bad("times")
	}
	b.first = int64(binary.BigEndian.Uint64(raw[r.p:]))
	b.last = int64(binary.BigEndian.Uint64(raw[r.p+8:]))
	r.p += 16
	var ok bool
	if b.session, ok = r.str(); !ok {
		return bad("session")
	}
	n, ok := r.uvarint()
	if !ok || n > uint64(r.left()) {
		return bad("candidate count")
	}
	b.cands = make([]cand, n)
	for i := range b.cands {
		local, ok1 := r.uvarint()
		text, ok2 := r.str()
		if !ok1 || !ok2 || local >= sents {
			return bad("candidate")
		}
		b.cands[i] = cand{local: int(local), text: text}
	}
	if n, ok = r.uvarint(); !ok || n > uint64(r.left()) {
		return bad("term count")
	}
	b.terms = make([]blockTerm, n)
	for i := range b.terms {
		w, ok1 := r.str()
		c, ok2 := r.uvarint()
		df, ok3 := r.uvarint()
		if !ok1 || !ok2 || !ok3 || df == 0 || df > c || c > 1<<40 {
			return bad("term")
		}
		b.terms[i] = blockTerm{w, int(c), int(df)}
	}
	if r.left() != 0 {
		return bad("trailing bytes")
	}
	return b, nil
}

// blockPlan is what a Commit rebuilds of one group: the stale block
// records are deleted, and chunks holds the chunks (in reading order) of
// each new block, keyed by its first chunk's index key.
type blockPlan struct {
	keys   [][]byte
	chunks [][]*chunk
}

// planBlocks deletes the blocks of group g that the changes between index
// keys lo and hi (inclusive, both states) can reach, from the last block
// start before lo to the first block start after hi, and returns the
// chunks of their replacements, without content (the caller reads it,
// for all groups at once, before put). Keys outside [lo, hi] are the same
// before and after the change, so blocks outside that range are
// unchanged. A chunk in pending (applied since the last Commit, written
// in this one) is taken from there, without reading its record back.
func planBlocks(tx *bolt.Tx, g groupKey, lo, hi []byte, pending map[string]*chunk, recs *chunkRecords) (*blockPlan, error) {
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
		starts, err := startsBlockAt(gp, k)
		if err != nil {
			return nil, err
		}
		if starts {
			start = append([]byte(nil), k...)
			break
		}
	}
	var end []byte // nil: group end
	for k, _ = c.Seek(hi); k != nil && bytes.HasPrefix(k, gp); k, _ = c.Next() {
		if bytes.Compare(k, hi) <= 0 {
			continue
		}
		starts, err := startsBlockAt(gp, k)
		if err != nil {
			return nil, err
		}
		if starts {
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
			return nil, err
		}
	}

	p := &blockPlan{}
	for k, _ = c.Seek(start); within(k); k, _ = c.Next() {
		id, err := idOfKey(gp, k)
		if err != nil {
			return nil, err
		}
		if len(p.keys) == 0 || startsBlock(id) {
			p.keys = append(p.keys, append([]byte{g.prefix}, k...))
			p.chunks = append(p.chunks, nil)
		}
		ch := pending[id]
		if ch == nil {
			rec, _, err := recs.get(projections.IDKey(id))
			if err != nil {
				return nil, err
			}
			if ch, err = decodeChunk(id, rec); err != nil {
				return nil, err
			}
		}
		p.chunks[len(p.chunks)-1] = append(p.chunks[len(p.chunks)-1], ch)
	}
	return p, nil
}

// put writes the planned blocks of group g, their chunks analysed.
func (p *blockPlan) put(tx *bolt.Tx, g groupKey, opts Options) error {
	blocks := tx.Bucket(bucketBlocks)
	for i, cs := range p.chunks {
		if err := blocks.Put(p.keys[i], encodeBlock(newBlock(cs, opts))); err != nil {
			return err
		}
	}
	return nil
}

// merge is the summary of group g from its stored blocks; nil when the
// group has no live chunk. The blocks' candidate sentences are summarised
// as one text (weights over the candidates); a key term weighs its counts
// summed over the blocks that list it, against all the group's sentences.
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
	var candWords []string // the candidates' words, one after another
	firstIsCand := false
	terms := map[string]*termStat{}
	for i, b := range bs {
		s.Chunks += b.chunks
		n += b.sents
		s.First, s.Last = min(s.First, b.first), max(s.Last, b.last)
		for _, cd := range b.cands {
			if i == 0 && cd.local == 0 {
				firstIsCand = true
			}
			from := len(candWords)
			candWords = textutil.AppendContentWords(candWords, cd.text)
			sents = append(sents, sentence{text: cd.text, words: candWords[from:len(candWords):len(candWords)], pos: len(sents)})
		}
		for _, t := range b.terms {
			st := terms[t.word]
			if st == nil {
				st = &termStat{}
				terms[t.word] = st
			}
			st.count += t.count
			st.df += t.df
		}
	}
	weights := make(map[string]float64, len(terms))
	words := make([]string, 0, len(terms))
	for w, st := range terms {
		weights[w] = termWeight(st.count, st.df, n)
		words = append(words, w)
	}
	s.KeyTerms = topTerms(words, weights, opts.KeyTerms)
	if len(sents) > 0 {
		ex := summarizeFirst(sents, opts.MaxTokens, firstIsCand)
		s.Text = ex.text
	}
	s.Tokens = textutil.EstimateTokens(s.Text)
	return s, nil
}
