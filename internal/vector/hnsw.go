package vector

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"sync"
	"unsafe"
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
	hnswVersion = 2
	levelZero   = -1 // stored zero vector: kept, never linked, never a hit
	levelDead   = -2 // deleted slot awaiting compaction
)

// HNSW is a hierarchical navigable small world graph (Malkov & Yashunin,
// 2016/2018) over cosine similarity, written for determinism: the graph, and
// so MarshalBinary's bytes, is a pure function of the sequence of Add and
// Delete calls. See the package doc for the rules that make it so.
//
// Serialized form, version 2 (little-endian; WriteTo streams it, and
// OpenHNSWFile maps it and searches it in place). Every section starts at a
// multiple of 64 bytes, zero-padded; n is the number of live nodes, in
// internal order with deleted slots squeezed out:
//
//	header (64 bytes)
//	  magic     "UCLVHNSW"      8 bytes
//	  version   uint16 = 2
//	  reserved  uint16 = 0
//	  dim       uint32
//	  M         uint32
//	  efConstr  uint32
//	  n         uint32
//	  entry     uint32          node of the entry point, 0xFFFFFFFF if none
//	  upWords   uint32          length of the upper-links section, in words
//	  reserved  uint32 = 0
//	  idBytes   uint64          length of the id section
//	  reserved  16 zero bytes
//	levels    n × int8          0..15, or -1 (0xFF) for a zero vector
//	vectors   n × dim × float32 normalised
//	layer 0   n × (2M+1) × uint32: count, links, zeros to 2M
//	upperOff  (n+1) × uint32    node i's upper lists are words
//	                            upperOff[i]..upperOff[i+1] of the next section
//	upper     upWords × uint32  per node with level L ≥ 1, for layers 1..L:
//	                            count, links, zeros to M
//	idOff     (n+1) × uint64    node i's id is bytes idOff[i]..idOff[i+1]
//	ids       idBytes bytes
//	sorted    n × uint32        the nodes in ascending id (byte) order
//	sha256    32 bytes over everything above, at the next multiple of 64
//
// Version 1 (variable-length, decoded whole) is still read; see
// unmarshalV1. Squeezing deleted slots preserves the relative order of live
// nodes, and every tie-break uses that order, so load-then-continue builds
// the same graph as never having stopped.
type HNSW struct {
	mu  sync.RWMutex
	dim int
	m   int
	m0  int
	efC int
	efS int
	n   int    // slots: live, zero-vector and deleted nodes
	lvl []int8 // per slot
	// Vectors: slots below nbase live in base (the mapped graph file);
	// later ones in fixed blocks of vecBlock vectors, so growing never
	// copies the vectors already held.
	base   []float32
	nbase  int
	blocks [][]float32
	// Level-0 links live in one arena so following a link costs one cache
	// miss: node x owns l0[x*(m0+1):(x+1)*(m0+1)], a count then the links.
	l0 []int32
	// Upper-layer links: node x owns upa[uo[x]:uo[x+1]], level(x) runs of
	// M+1 words (a count then the links) for layers 1..level(x).
	uo  []int32
	upa []int32
	// ids: slots below nbase are read from the file (file.id), later ones
	// from ids[slot-nbase]. byID maps the ids of slots >= nbase; the
	// file's live ids are found through its sorted table.
	ids  []string
	byID map[string]int32
	file *graphFile
	live int
	dead int
	// entry is the lowest-index node among those of the highest level, or -1.
	entry    int32
	maxLevel int

	trk *deltaTrack // changes since the last save (hnswdelta.go)

	build *scratch // used under the write lock
	pool  sync.Pool
}

// vecBlock is the number of vectors per heap block.
const vecBlock = 1024

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
	g.n, g.lvl, g.l0, g.uo, g.upa = 0, nil, nil, []int32{0}, nil
	g.base, g.nbase, g.blocks = nil, 0, nil
	g.ids, g.byID, g.file = nil, map[string]int32{}, nil
	g.live, g.dead, g.entry, g.maxLevel = 0, 0, -1, -1
	g.trk = nil
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
	return g.live
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
	if int(i) < g.nbase {
		return g.base[int(i)*g.dim : (int(i)+1)*g.dim]
	}
	j := int(i) - g.nbase
	o := (j % vecBlock) * g.dim
	return g.blocks[j/vecBlock][o : o+g.dim]
}

// appendVec stores v in a new slot's place (the caller appends the slot).
func (g *HNSW) appendVec(v []float32) {
	j := g.n - g.nbase
	if j%vecBlock == 0 {
		g.blocks = append(g.blocks, make([]float32, 0, vecBlock*g.dim))
	}
	b := &g.blocks[j/vecBlock]
	*b = append(*b, v...)
}

// id returns slot i's id ("" for a deleted slot above the file).
func (g *HNSW) id(i int32) string {
	if int(i) < g.nbase {
		return g.file.id(i)
	}
	return g.ids[int(i)-g.nbase]
}

// lookup returns the slot holding id.
func (g *HNSW) lookup(id string) (int32, bool) {
	if x, ok := g.byID[id]; ok {
		return x, true
	}
	if g.file != nil {
		if x, ok := g.file.find(id); ok && int(x) < g.nbase && g.lvl[x] != levelDead {
			return x, true
		}
	}
	return 0, false
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
	if old, ok := g.lookup(id); ok {
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
	g.touch()
	idx := int32(g.n)
	g.appendVec(q)
	g.ids = append(g.ids, id)
	g.byID[id] = idx
	g.n++
	g.live++
	g.l0 = append(g.l0, make([]int32, g.m0+1)...)
	if zero {
		g.lvl = append(g.lvl, levelZero)
		g.uo = append(g.uo, g.uo[len(g.uo)-1])
		return
	}
	l := levelFor(id, g.m)
	g.lvl = append(g.lvl, int8(l))
	g.upa = append(g.upa, make([]int32, l*(g.m+1))...)
	g.uo = append(g.uo, int32(len(g.upa)))
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

// slot returns x's layer-lc list: a count, then room for mmax(lc) links.
func (g *HNSW) slot(x int32, lc int) []int32 {
	if lc == 0 {
		b := int(x) * (g.m0 + 1)
		return g.l0[b : b+g.m0+1]
	}
	b := int(g.uo[x]) + (lc-1)*(g.m+1)
	return g.upa[b : b+g.m+1]
}

// links returns x's neighbours on layer lc (a view; do not append to it).
func (g *HNSW) links(x int32, lc int) []int32 {
	s := g.slot(x, lc)
	return s[1 : 1+s[0]]
}

// appendLink adds e to x's layer-lc links (the caller ensures room).
func (g *HNSW) appendLink(x int32, lc int, e int32) {
	g.trackList(x, lc)
	s := g.slot(x, lc)
	s[0]++
	s[s[0]] = e
}

// setLinks replaces x's layer-lc links with the nodes of sel.
func (g *HNSW) setLinks(x int32, lc int, sel []item) {
	g.trackList(x, lc)
	s := g.slot(x, lc)
	for j, it := range sel {
		s[1+j] = it.i
	}
	s[0] = int32(len(sel))
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

// coldSearches is how many searches of a graph opened from a file read the
// base layer's vectors with pread rather than through the mapping. A
// search reads a few thousand vectors scattered over the file; through the
// mapping each is a page fault, which also maps the pages around it (at
// 250K chunks: ~4,000 faults, 20 ms of system time and 250 MB of resident
// pages in a `ucl query` process), while a pread of the same vector costs
// about a third of that. A process that searches once (a command) pays
// the faults for nothing; one that keeps searching (an owner) reads
// faulted pages for free from then on, so only the first searches read.
var coldSearches int32 = 2

// cold reports whether this search reads vectors with pread: the graph's
// file is open and unchanged (its pages hold the file's bytes), the host
// lays floats out as the file does, and the first coldSearches are not
// spent. Called with g.mu held.
func (g *HNSW) cold() bool {
	f := g.file
	if f == nil || f.f == nil || f.written || !hostLittleEndian || f.searches.Load() >= coldSearches {
		return false
	}
	return f.searches.Add(1) <= coldSearches
}

// readVec reads base slot i's vector from the graph file into sc.vbuf
// (later slots are in memory). A read that fails falls back to the
// mapping, which holds the same bytes.
func (g *HNSW) readVec(i int32, sc *scratch) []float32 {
	if int(i) >= g.nbase {
		return g.vec(i)
	}
	if len(sc.vbuf) != g.dim {
		sc.vbuf = make([]float32, g.dim)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&sc.vbuf[0])), 4*g.dim)
	if n, err := g.file.f.ReadAt(b, g.file.vecOff+int64(i)*int64(4*g.dim)); err != nil || n != len(b) {
		return g.vec(i)
	}
	return sc.vbuf
}

// scratch holds reusable search state: a generation-stamped visited set and
// the two heaps of Algorithm 2.
type scratch struct {
	// pread: read base vectors from the file, into vbuf (coldSearches).
	pread   bool
	vbuf    []float32
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
	sc.next(g.n)
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
		if !sc.pread {
			for _, e := range links {
				if sc.visited[e] != sc.gen {
					prefetch(&g.vec(e)[0], g.dim)
				}
			}
		}
		for _, e := range links {
			if sc.visited[e] == sc.gen {
				continue
			}
			sc.visited[e] = sc.gen
			v := g.vec(e)
			if sc.pread {
				v = g.readVec(e, sc)
			}
			it := item{dot(q, v), e}
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
	idx, ok := g.lookup(id)
	if !ok {
		return nil
	}
	g.deleteLocked(idx)
	if g.dead > 1024 && g.dead > g.live {
		g.compactLocked()
	}
	return nil
}

func (g *HNSW) deleteLocked(idx int32) {
	g.touch()
	g.trackDead(idx)
	if int(idx) >= g.nbase {
		delete(g.byID, g.ids[int(idx)-g.nbase])
		g.ids[int(idx)-g.nbase] = ""
	}
	l := int(g.lvl[idx])
	g.lvl[idx] = levelDead
	g.live--
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
	for lc := 0; lc <= l; lc++ {
		g.slot(idx, lc)[0] = 0
	}
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
	sc.next(g.n)
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
	rm := make([]int32, g.n)
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
// future decision). Everything moves to the heap.
func (g *HNSW) compactLocked() {
	if g.trk != nil {
		g.trk.broken = true
	}
	rm, _ := g.remap()
	ng := &HNSW{dim: g.dim}
	ng.reset(g.m, g.efC)
	for i := 0; i < g.n; i++ {
		if rm[i] < 0 {
			continue
		}
		x := int32(i)
		id := g.id(x)
		ng.appendVec(g.vec(x))
		ng.ids = append(ng.ids, id)
		ng.byID[id] = rm[i]
		ng.n++
		ng.lvl = append(ng.lvl, g.lvl[i])
		ng.l0 = append(ng.l0, make([]int32, g.m0+1)...)
		l := max(int(g.lvl[i]), -1)
		ng.upa = append(ng.upa, make([]int32, max(l, 0)*(g.m+1))...)
		ng.uo = append(ng.uo, int32(len(ng.upa)))
		for lc := 0; lc <= l; lc++ {
			s, d := g.slot(x, lc), ng.slot(rm[i], lc)
			d[0] = s[0]
			for j := 1; j <= int(s[0]); j++ {
				d[j] = rm[s[j]]
			}
		}
	}
	if g.entry >= 0 {
		g.entry = rm[g.entry]
	}
	g.n, g.lvl, g.l0, g.uo, g.upa = ng.n, ng.lvl, ng.l0, ng.uo, ng.upa
	g.base, g.nbase, g.blocks = nil, 0, ng.blocks
	g.ids, g.byID, g.file = ng.ids, ng.byID, nil
	g.dead = 0
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
	sc.pread = g.cold()
	w := g.searchLayer(nq, []item{ep}, max(g.efS, k), 0, sc)
	sc.pread = false
	hits := make([]Hit, len(w))
	for i, it := range w {
		hits[i] = Hit{ID: g.id(it.i), Score: it.s}
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
	ids := make([]string, 0, g.live)
	at := make(map[string]int32, g.live)
	for i := 0; i < g.n; i++ {
		if g.lvl[i] != levelDead {
			id := g.id(int32(i))
			ids = append(ids, id)
			at[id] = int32(i)
		}
	}
	return ContentDigest(g.dim, ids, func(id string) []float32 { return g.vec(at[id]) })
}

var _ Index = (*HNSW)(nil)
