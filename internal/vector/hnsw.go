package vector

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"sync"
)

// HNSWOptions configures an HNSW index. Zero fields take the defaults.
type HNSWOptions struct {
	// M is the number of neighbours chosen per node per layer (default 16);
	// layer 0 keeps up to 2*M. It shapes the graph, so it is serialized.
	M int
	// EfConstruction is the candidate-list size while inserting (default
	// 128). It shapes the graph, so it is serialized.
	EfConstruction int
	// EfSearch is the candidate-list size while searching (default 128, and
	// never below k). It is a query-time knob and is not serialized.
	EfSearch int
}

// Defaults for HNSWOptions.
const (
	DefaultM              = 16
	DefaultEfConstruction = 128
	DefaultEfSearch       = 128
)

// maxLevelCap bounds node levels (P(level >= 15) = M^-15 for M=16).
const maxLevelCap = 15

const (
	hnswMagic   = "UCLVHNSW"
	hnswVersion = 1
	levelZero   = -1 // stored zero vector: kept, never linked, never a hit
	levelDead   = -2 // deleted slot awaiting compaction
)

// HNSW is a hierarchical navigable small world graph (Malkov & Yashunin,
// 2016/2018) over cosine similarity, written for determinism: the graph, and
// so MarshalBinary's bytes, is a pure function of the sequence of Add and
// Delete calls. See the package doc for the rules that make it so.
//
// Serialized form (little-endian; do not change without bumping the version):
//
//	magic     "UCLVHNSW"        8 bytes
//	version   uint16 = 1
//	dim       uint32
//	M         uint16
//	efConstr  uint32
//	count     uint32            live nodes
//	entry     uint32            node index of the entry point, 0xFFFFFFFF if none
//	count × node, in internal order with deleted slots squeezed out:
//	  id      uvarint length + bytes
//	  level   uint8             0..15, or 0xFF for a zero vector (not in graph)
//	  vector  dim × float32     normalised
//	  for each layer 0..level: n uvarint, then n × uvarint neighbour index
//	sha256    32 bytes over everything above
//
// Squeezing deleted slots preserves the relative order of live nodes, and
// every tie-break uses that order, so unmarshal-then-continue builds the same
// graph as never having marshalled.
type HNSW struct {
	mu   sync.RWMutex
	dim  int
	m    int
	m0   int
	efC  int
	efS  int
	ids  []string
	vecs []float32 // len(ids)*dim
	lvl  []int8
	// Level-0 links live in one arena so following a link costs one cache
	// miss: node x owns l0[x*(m0+1):(x+1)*(m0+1)], a count then the links.
	l0   []int32
	up   [][][]int32 // up[x][lc-1] = links of x on layer lc >= 1
	byID map[string]int32
	dead int
	// entry is the lowest-index node among those of the highest level, or -1.
	entry    int32
	maxLevel int

	build *scratch // used under the write lock
	pool  sync.Pool
}

// NewHNSW returns an empty HNSW index for vectors of dimension dim.
func NewHNSW(dim int, opts HNSWOptions) (*HNSW, error) {
	if opts.M == 0 {
		opts.M = DefaultM
	}
	if opts.EfConstruction == 0 {
		opts.EfConstruction = DefaultEfConstruction
	}
	if opts.EfSearch == 0 {
		opts.EfSearch = DefaultEfSearch
	}
	switch {
	case dim <= 0 || dim > MaxDim:
		return nil, fmt.Errorf("new hnsw: dim %d: %w", dim, ErrInvalidOptions)
	case opts.M < 2 || opts.M > 1024:
		return nil, fmt.Errorf("new hnsw: M %d not in [2,1024]: %w", opts.M, ErrInvalidOptions)
	case opts.EfConstruction < 1 || opts.EfSearch < 1:
		return nil, fmt.Errorf("new hnsw: ef must be positive: %w", ErrInvalidOptions)
	}
	g := &HNSW{dim: dim, efS: opts.EfSearch}
	g.reset(opts.M, opts.EfConstruction)
	return g, nil
}

func (g *HNSW) reset(m, efC int) {
	g.m, g.m0, g.efC = m, 2*m, efC
	g.ids, g.vecs, g.lvl, g.l0, g.up = nil, nil, nil, nil, nil
	g.byID = map[string]int32{}
	g.dead, g.entry, g.maxLevel = 0, -1, -1
	g.build = &scratch{}
}

// SetEfSearch changes the search candidate-list size (ef >= 1).
func (g *HNSW) SetEfSearch(ef int) error {
	if ef < 1 {
		return fmt.Errorf("set ef search %d: %w", ef, ErrInvalidOptions)
	}
	g.mu.Lock()
	g.efS = ef
	g.mu.Unlock()
	return nil
}

// Dim returns the vector dimension.
func (g *HNSW) Dim() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.dim
}

// Len returns the number of stored ids (zero vectors included).
func (g *HNSW) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.byID)
}

// levelFor derives a node's level from its id alone: P(level >= l) = M^-l,
// the paper's floor(-ln(u)·mL) with mL = 1/ln(M), computed with integer
// thresholds (2^64 / M^l) on a 64-bit hash of the id, so no RNG and no
// floating-point log are involved.
func levelFor(id string, m int) int {
	h := fnv.New64a()
	h.Write([]byte("ucl/hnsw-level\x00"))
	h.Write([]byte(id))
	x := mix64(h.Sum64())
	t := ^uint64(0)
	l := 0
	for l < maxLevelCap {
		t /= uint64(m)
		if x >= t {
			break
		}
		l++
	}
	return l
}

// mix64 is the splitmix64 finaliser; it spreads FNV's weak high bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func (g *HNSW) vec(i int32) []float32 {
	return g.vecs[int(i)*g.dim : (int(i)+1)*g.dim]
}

// Add stores a normalised copy of v under id, replacing any previous vector.
func (g *HNSW) Add(id string, v []float32) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("add vector: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	nv, zero, err := normalized(v, g.dim)
	if err != nil {
		return fmt.Errorf("add vector %q: %w", id, err)
	}
	if old, ok := g.byID[id]; ok {
		if equalBits(g.vec(old), nv) {
			return nil
		}
		g.deleteLocked(old)
	}
	g.insertLocked(id, nv, zero)
	return nil
}

func equalBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// item is a node with its similarity to the current query or base node.
type item struct {
	s float32
	i int32
}

// closer is the total order used for every decision: higher similarity
// first, then lower node index (which is insertion order).
func closer(a, b item) bool {
	if a.s != b.s {
		return a.s > b.s
	}
	return a.i < b.i
}

func (g *HNSW) insertLocked(id string, q []float32, zero bool) {
	idx := int32(len(g.ids))
	g.ids = append(g.ids, id)
	g.vecs = append(g.vecs, q...)
	g.byID[id] = idx
	if zero {
		g.lvl = append(g.lvl, levelZero)
		g.l0 = append(g.l0, make([]int32, g.m0+1)...)
		g.up = append(g.up, nil)
		return
	}
	l := levelFor(id, g.m)
	g.lvl = append(g.lvl, int8(l))
	g.l0 = append(g.l0, make([]int32, g.m0+1)...)
	var up [][]int32
	if l > 0 {
		up = make([][]int32, l)
		for i := range up {
			up[i] = make([]int32, 0, g.m+1)
		}
	}
	g.up = append(g.up, up)
	if g.entry < 0 {
		g.entry, g.maxLevel = idx, l
		return
	}
	sc := g.build
	ep := item{dot(q, g.vec(g.entry)), g.entry}
	for lc := g.maxLevel; lc > l; lc-- {
		ep = g.greedy(q, ep, lc)
	}
	eps := append(sc.eps[:0], ep)
	for lc := min(l, g.maxLevel); lc >= 0; lc-- {
		w := g.searchLayer(q, eps, g.efC, lc, sc)
		sortItems(w)
		eps = append(eps[:0], w...)
		sel := g.selectNeighbors(eps, g.m, &sc.sel)
		for _, n := range sel {
			g.appendLink(idx, lc, n.i)
		}
		for _, n := range sel {
			g.connect(n.i, idx, n.s, lc)
		}
	}
	sc.eps = eps
	if l > g.maxLevel {
		g.entry, g.maxLevel = idx, l
	}
}

// links returns x's neighbours on layer lc (a view; do not append to it).
func (g *HNSW) links(x int32, lc int) []int32 {
	if lc == 0 {
		b := int(x) * (g.m0 + 1)
		return g.l0[b+1 : b+1+int(g.l0[b])]
	}
	return g.up[x][lc-1]
}

// appendLink adds e to x's layer-lc links (the caller ensures room).
func (g *HNSW) appendLink(x int32, lc int, e int32) {
	if lc == 0 {
		b := int(x) * (g.m0 + 1)
		g.l0[b]++
		g.l0[b+int(g.l0[b])] = e
		return
	}
	g.up[x][lc-1] = append(g.up[x][lc-1], e)
}

// setLinks replaces x's layer-lc links with the nodes of sel.
func (g *HNSW) setLinks(x int32, lc int, sel []item) {
	if lc == 0 {
		b := int(x) * (g.m0 + 1)
		for j, it := range sel {
			g.l0[b+1+j] = it.i
		}
		g.l0[b] = int32(len(sel))
		return
	}
	list := g.up[x][lc-1][:0]
	for _, it := range sel {
		list = append(list, it.i)
	}
	g.up[x][lc-1] = list
}

// setLinkIDs replaces x's layer-lc links with ids (len <= mmax(lc)).
func (g *HNSW) setLinkIDs(x int32, lc int, ids []int32) {
	if lc == 0 {
		b := int(x) * (g.m0 + 1)
		copy(g.l0[b+1:], ids)
		g.l0[b] = int32(len(ids))
		return
	}
	g.up[x][lc-1] = append(g.up[x][lc-1][:0], ids...)
}

func (g *HNSW) mmax(lc int) int {
	if lc == 0 {
		return g.m0
	}
	return g.m
}

// connect adds the link n -> nw (similarity s) at layer lc, shrinking n's
// list with the heuristic when it overflows.
func (g *HNSW) connect(n, nw int32, s float32, lc int) {
	list := g.links(n, lc)
	if len(list) < g.mmax(lc) {
		g.appendLink(n, lc, nw)
		return
	}
	base := g.vec(n)
	cands := g.build.cands[:0]
	for _, e := range list {
		cands = append(cands, item{dot(base, g.vec(e)), e})
	}
	cands = append(cands, item{s, nw})
	sortItems(cands)
	sel := g.selectNeighbors(cands, g.mmax(lc), &g.build.shrink)
	g.setLinks(n, lc, sel)
	g.build.cands = cands
}

// selectNeighbors is the paper's Algorithm 4 without candidate extension
// and without keeping pruned connections: walking candidates from closest,
// keep e if it is closer to the base than to every already-kept neighbour.
// cands must be sorted by closer.
func (g *HNSW) selectNeighbors(cands []item, m int, buf *[]item) []item {
	r := (*buf)[:0]
	for _, c := range cands {
		if len(r) >= m {
			break
		}
		cv := g.vec(c.i)
		good := true
		for _, k := range r {
			if dot(cv, g.vec(k.i)) > c.s {
				good = false
				break
			}
		}
		if good {
			r = append(r, c)
		}
	}
	*buf = r
	return r
}

// greedy walks layer lc from ep to a local optimum (searchLayer with ef=1).
func (g *HNSW) greedy(q []float32, ep item, lc int) item {
	for changed := true; changed; {
		changed = false
		for _, e := range g.links(ep.i, lc) {
			it := item{dot(q, g.vec(e)), e}
			if closer(it, ep) {
				ep, changed = it, true
			}
		}
	}
	return ep
}

// scratch holds reusable search state: a generation-stamped visited set and
// the two heaps of Algorithm 2.
type scratch struct {
	visited []uint32
	gen     uint32
	cand    []item // heap, top = closest
	res     []item // heap, top = furthest
	eps     []item
	sel     []item
	shrink  []item // connect's buffer: insert iterates sel while connecting
	cands   []item
}

func (sc *scratch) next(n int) {
	if len(sc.visited) < n {
		sc.visited = append(sc.visited, make([]uint32, n-len(sc.visited)+n/4)...)
	}
	sc.gen++
	if sc.gen == 0 {
		clear(sc.visited)
		sc.gen = 1
	}
}

// searchLayer is Algorithm 2: best-first search of layer lc from eps,
// returning up to ef closest nodes (unsorted, in sc.res).
func (g *HNSW) searchLayer(q []float32, eps []item, ef, lc int, sc *scratch) []item {
	sc.next(len(g.ids))
	cand, res := sc.cand[:0], sc.res[:0]
	for _, e := range eps {
		sc.visited[e.i] = sc.gen
		cand = pushNear(cand, e)
		res = pushFar(res, e)
		if len(res) > ef {
			res = popFar(res)
		}
	}
	for len(cand) > 0 {
		c := cand[0]
		cand = popNear(cand)
		if closer(res[0], c) {
			break
		}
		links := g.links(c.i, lc)
		// Vectors are scattered over memory; asking for all unvisited
		// neighbours up front overlaps their cache misses.
		for _, e := range links {
			if sc.visited[e] != sc.gen {
				prefetch(&g.vecs[int(e)*g.dim], g.dim)
			}
		}
		for _, e := range links {
			if sc.visited[e] == sc.gen {
				continue
			}
			sc.visited[e] = sc.gen
			it := item{dot(q, g.vec(e)), e}
			if len(res) < ef || closer(it, res[0]) {
				cand = pushNear(cand, it)
				res = pushFar(res, it)
				if len(res) > ef {
					res = popFar(res)
				}
			}
		}
	}
	sc.cand, sc.res = cand, res
	return res
}

// The two heaps are written out (not parameterised by a func value) so the
// comparisons inline; they are the hottest code after dot.

// pushNear pushes x onto a heap whose top is the closest item.
func pushNear(h []item, x item) []item {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !closer(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

// popNear removes the top (closest) item.
func popNear(h []item) []item {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && closer(h[l], h[m]) {
			m = l
		}
		if r < n && closer(h[r], h[m]) {
			m = r
		}
		if m == i {
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// pushFar pushes x onto a heap whose top is the furthest item.
func pushFar(h []item, x item) []item {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !closer(h[p], h[i]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

// popFar removes the top (furthest) item.
func popFar(h []item) []item {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && closer(h[m], h[l]) {
			m = l
		}
		if r < n && closer(h[m], h[r]) {
			m = r
		}
		if m == i {
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func sortItems(x []item) {
	sort.Slice(x, func(i, j int) bool { return closer(x[i], x[j]) })
}

// Delete removes id (unknown ids are a no-op) and repairs the graph: every
// node that linked to it re-selects its neighbours, with the heuristic,
// from its remaining links plus the deleted node's links. Finding the
// in-links scans the layer, O(n·M) per delete.
func (g *HNSW) Delete(id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	idx, ok := g.byID[id]
	if !ok {
		return nil
	}
	g.deleteLocked(idx)
	if g.dead > 1024 && g.dead > len(g.byID) {
		g.compactLocked()
	}
	return nil
}

func (g *HNSW) deleteLocked(idx int32) {
	delete(g.byID, g.ids[idx])
	l := int(g.lvl[idx])
	g.lvl[idx] = levelDead
	g.ids[idx] = ""
	g.dead++
	for lc := 0; lc <= l; lc++ {
		dn := g.links(idx, lc)
		for x := range g.lvl {
			if int(g.lvl[x]) < lc || int32(x) == idx {
				continue
			}
			list := g.links(int32(x), lc)
			at := -1
			for j, e := range list {
				if e == idx {
					at = j
					break
				}
			}
			if at < 0 {
				continue
			}
			g.repair(int32(x), idx, dn, lc)
		}
	}
	g.l0[int(idx)*(g.m0+1)] = 0
	g.up[idx] = nil
	clear(g.vec(idx))
	if g.entry == idx {
		g.entry, g.maxLevel = -1, -1
		for i, lv := range g.lvl {
			if int(lv) > g.maxLevel {
				g.entry, g.maxLevel = int32(i), int(lv)
			}
		}
	}
}

// repair re-selects x's layer-lc neighbours after del is removed.
func (g *HNSW) repair(x, del int32, dn []int32, lc int) {
	base := g.vec(x)
	sc := g.build
	sc.next(len(g.ids))
	sc.visited[x], sc.visited[del] = sc.gen, sc.gen
	cands := sc.cands[:0]
	for _, src := range [2][]int32{g.links(x, lc), dn} {
		for _, e := range src {
			if sc.visited[e] == sc.gen {
				continue
			}
			sc.visited[e] = sc.gen
			cands = append(cands, item{dot(base, g.vec(e)), e})
		}
	}
	sortItems(cands)
	sel := g.selectNeighbors(cands, g.mmax(lc), &sc.sel)
	g.setLinks(x, lc, sel)
	sc.cands = cands
}

// remap returns old index -> new index with deleted slots squeezed out
// (order preserved), and the live count.
func (g *HNSW) remap() ([]int32, int) {
	rm := make([]int32, len(g.ids))
	n := int32(0)
	for i, lv := range g.lvl {
		if lv == levelDead {
			rm[i] = -1
			continue
		}
		rm[i] = n
		n++
	}
	return rm, int(n)
}

// compactLocked squeezes deleted slots out, preserving order (and so every
// future decision).
func (g *HNSW) compactLocked() {
	rm, n := g.remap()
	ids := make([]string, 0, n)
	vecs := make([]float32, 0, n*g.dim)
	lvl := make([]int8, 0, n)
	l0 := make([]int32, 0, n*(g.m0+1))
	up := make([][][]int32, 0, n)
	for i := range g.ids {
		if rm[i] < 0 {
			continue
		}
		ids = append(ids, g.ids[i])
		vecs = append(vecs, g.vec(int32(i))...)
		lvl = append(lvl, g.lvl[i])
		slot := g.l0[i*(g.m0+1) : (i+1)*(g.m0+1)]
		for j := 1; j <= int(slot[0]); j++ {
			slot[j] = rm[slot[j]]
		}
		l0 = append(l0, slot...)
		for _, list := range g.up[i] {
			for j, e := range list {
				list[j] = rm[e]
			}
		}
		up = append(up, g.up[i])
		g.byID[g.ids[i]] = rm[i]
	}
	if g.entry >= 0 {
		g.entry = rm[g.entry]
	}
	g.ids, g.vecs, g.lvl, g.l0, g.up, g.dead = ids, vecs, lvl, l0, up, 0
}

// Search returns the k most similar stored vectors to q (Algorithm 5:
// greedy descent to layer 1, then searchLayer with ef = max(EfSearch, k)).
func (g *HNSW) Search(q []float32, k int) ([]Hit, error) {
	if k <= 0 {
		return nil, fmt.Errorf("search: k=%d: %w", k, ErrInvalidK)
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	nq, zero, err := normalized(q, g.dim)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if zero || g.entry < 0 {
		return nil, nil
	}
	sc, _ := g.pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer g.pool.Put(sc)
	ep := item{dot(nq, g.vec(g.entry)), g.entry}
	for lc := g.maxLevel; lc > 0; lc-- {
		ep = g.greedy(nq, ep, lc)
	}
	w := g.searchLayer(nq, []item{ep}, max(g.efS, k), 0, sc)
	hits := make([]Hit, len(w))
	for i, it := range w {
		hits[i] = Hit{ID: g.ids[it.i], Score: it.s}
	}
	sortHits(hits)
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// Digest returns ContentDigest of the stored content.
func (g *HNSW) Digest() [32]byte {
	g.mu.RLock()
	defer g.mu.RUnlock()
	ids := make([]string, 0, len(g.byID))
	for id := range g.byID {
		ids = append(ids, id)
	}
	return ContentDigest(g.dim, ids, func(id string) []float32 { return g.vec(g.byID[id]) })
}

// MarshalBinary encodes the graph in the documented form.
func (g *HNSW) MarshalBinary() ([]byte, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	rm, n := g.remap()
	e := &encoder{b: make([]byte, 0, 40+n*(4*g.dim+2*g.m+24))}
	e.b = append(e.b, hnswMagic...)
	e.u16(hnswVersion)
	e.u32(uint32(g.dim))
	e.u16(uint16(g.m))
	e.u32(uint32(g.efC))
	e.u32(uint32(n))
	if g.entry < 0 {
		e.u32(math.MaxUint32)
	} else {
		e.u32(uint32(rm[g.entry]))
	}
	for i := range g.ids {
		if rm[i] < 0 {
			continue
		}
		e.str(g.ids[i])
		e.u8(uint8(g.lvl[i]))
		e.vec(g.vec(int32(i)))
		for lc := 0; lc <= int(g.lvl[i]); lc++ {
			list := g.links(int32(i), lc)
			e.uvarint(uint64(len(list)))
			for _, x := range list {
				e.uvarint(uint64(rm[x]))
			}
		}
	}
	return e.seal(), nil
}

// UnmarshalBinary replaces the index with data's graph, keeping this
// index's EfSearch. On error the index is unchanged.
func (g *HNSW) UnmarshalBinary(data []byte) error {
	d, err := openSealed(data, hnswMagic, hnswVersion)
	if err != nil {
		return err
	}
	dim := int(d.u32("dim"))
	m := int(d.u16("M"))
	efC := int(d.u32("efConstruction"))
	n := int(d.u32("count"))
	entry := d.u32("entry")
	if d.err != nil {
		return d.err
	}
	switch {
	case dim <= 0 || dim > MaxDim, m < 2 || m > 1024, efC < 1 || efC > 1<<20:
		return fmt.Errorf("decode index: bad parameters dim=%d M=%d ef=%d: %w", dim, m, efC, ErrCorrupt)
	case n > len(d.b)/(1+1+1+4*dim):
		return fmt.Errorf("decode index: count %d exceeds data: %w", n, ErrCorrupt)
	case entry != math.MaxUint32 && entry >= uint32(n):
		return fmt.Errorf("decode index: entry %d out of range: %w", entry, ErrCorrupt)
	}
	ng := &HNSW{dim: dim}
	ng.reset(m, efC)
	ng.ids = make([]string, n)
	ng.vecs = make([]float32, n*dim)
	ng.lvl = make([]int8, n)
	ng.l0 = make([]int32, n*(ng.m0+1))
	ng.up = make([][][]int32, n)
	for i := 0; i < n; i++ {
		id := d.str("id")
		lv := int(int8(d.u8("level")))
		if d.err != nil {
			return d.err
		}
		if checkID(id) != nil {
			return fmt.Errorf("decode index: node %d has invalid id: %w", i, ErrCorrupt)
		}
		if _, dup := ng.byID[id]; dup {
			return fmt.Errorf("decode index: duplicate id %q: %w", id, ErrCorrupt)
		}
		if lv < levelZero || lv > maxLevelCap || (lv >= 0 && lv != levelFor(id, m)) {
			return fmt.Errorf("decode index: node %d level %d invalid: %w", i, lv, ErrCorrupt)
		}
		ng.ids[i], ng.lvl[i], ng.byID[id] = id, int8(lv), int32(i)
		v := ng.vec(int32(i))
		d.vec(v)
		if d.err != nil {
			return d.err
		}
		if !checkStoredVector(v) || (lv == levelZero) != isZero(v) {
			return fmt.Errorf("decode index: node %d vector invalid: %w", i, ErrCorrupt)
		}
		if lv < 0 {
			continue
		}
		if lv > 0 {
			ng.up[i] = make([][]int32, lv)
		}
		for lc := 0; lc <= lv; lc++ {
			k := d.uvarint("link count")
			if d.err != nil {
				return d.err
			}
			if k > uint64(ng.mmax(lc)) {
				return fmt.Errorf("decode index: node %d layer %d has %d links: %w", i, lc, k, ErrCorrupt)
			}
			list := make([]int32, k, ng.mmax(lc)+1)
			for j := range list {
				x := d.uvarint("link")
				if d.err != nil {
					return d.err
				}
				if x >= uint64(n) || x == uint64(i) {
					return fmt.Errorf("decode index: node %d link %d out of range: %w", i, x, ErrCorrupt)
				}
				list[j] = int32(x)
			}
			if lc == 0 {
				ng.setLinkIDs(int32(i), 0, list)
			} else {
				ng.up[i][lc-1] = list
			}
		}
	}
	if err := d.end(); err != nil {
		return err
	}
	// Links must point at nodes present on that layer; the entry must be
	// the lowest-index node of the highest level.
	for i := range ng.lvl {
		for lc := 0; lc <= int(ng.lvl[i]); lc++ {
			for _, x := range ng.links(int32(i), lc) {
				if int(ng.lvl[x]) < lc {
					return fmt.Errorf("decode index: node %d links to %d above its level: %w", i, x, ErrCorrupt)
				}
			}
		}
	}
	want, wantLevel := int32(-1), -1
	for i, lv := range ng.lvl {
		if int(lv) > wantLevel {
			want, wantLevel = int32(i), int(lv)
		}
	}
	got := int32(-1)
	if entry != math.MaxUint32 {
		got = int32(entry)
	}
	if got != want {
		return fmt.Errorf("decode index: entry %d, want %d: %w", got, want, ErrCorrupt)
	}
	ng.entry, ng.maxLevel = want, wantLevel
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dim, g.m, g.m0, g.efC = ng.dim, ng.m, ng.m0, ng.efC
	g.ids, g.vecs, g.lvl, g.l0, g.up, g.byID = ng.ids, ng.vecs, ng.lvl, ng.l0, ng.up, ng.byID
	g.dead, g.entry, g.maxLevel, g.build = 0, ng.entry, ng.maxLevel, ng.build
	return nil
}

var _ Index = (*HNSW)(nil)
