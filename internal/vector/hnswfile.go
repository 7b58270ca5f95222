package vector

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"
)

// The graph file, version 2 (see the HNSW type's doc for the layout). It is
// the in-memory layout itself, so a file can be memory-mapped and searched
// without decoding: opening reads the 64-byte header, and a search reads
// the levels, links and vectors of the nodes it visits and the ids of its
// hits. It is written in one streaming pass (WriteTo), never assembled in
// memory.

const (
	hnswVersion1 = 1 // the variable-length format; still read
	headerSize   = 64
	fileAlign    = 64
	noEntry      = math.MaxUint32
)

// graphLayout is where each section of a version-2 file starts.
type graphLayout struct {
	levels, vecs, l0, uo, upa, idOff, ids, sorted, trailer, size int64
}

func alignUp(x int64) int64 { return (x + fileAlign - 1) &^ (fileAlign - 1) }

func makeLayout(n, dim, m, upWords int, idBytes int64) graphLayout {
	var l graphLayout
	o := int64(headerSize)
	next := func(at *int64, size int64) { *at = o; o = alignUp(o + size) }
	next(&l.levels, int64(n))
	next(&l.vecs, int64(n)*int64(dim)*4)
	next(&l.l0, int64(n)*int64(2*m+1)*4)
	next(&l.uo, int64(n+1)*4)
	next(&l.upa, int64(upWords)*4)
	next(&l.idOff, int64(n+1)*8)
	next(&l.ids, idBytes)
	next(&l.sorted, int64(n)*4)
	l.trailer, l.size = o, o+sha256.Size
	return l
}

// fileWriter streams sections through a buffer and the trailer's hash.
type fileWriter struct {
	w   *bufio.Writer
	h   io.Writer
	n   int64
	err error
	b   []byte
}

func (f *fileWriter) write(p []byte) {
	if f.err != nil {
		return
	}
	f.h.Write(p)
	_, f.err = f.w.Write(p)
	f.n += int64(len(p))
}

func (f *fileWriter) u32s(xs ...uint32) {
	f.b = f.b[:0]
	for _, x := range xs {
		f.b = binary.LittleEndian.AppendUint32(f.b, x)
	}
	f.write(f.b)
}

// padTo writes zeros up to offset at.
func (f *fileWriter) padTo(at int64) {
	var zero [fileAlign]byte
	for f.err == nil && f.n < at {
		f.write(zero[:min(int64(len(zero)), at-f.n)])
	}
	if f.err == nil && f.n != at {
		f.err = fmt.Errorf("write graph: section at %d, want %d", f.n, at)
	}
}

// WriteTo streams the graph in the version-2 format, with deleted slots
// squeezed out. Memory used beyond the graph is the id order (a few bytes
// per node) and a 64 KB buffer. The bytes are a pure function of the
// sequence of Add and Delete calls (and M, EfConstruction).
func (g *HNSW) WriteTo(w io.Writer) (int64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	rm, n := g.remap()
	old := make([]int32, 0, n) // new index -> slot
	ids := make([]string, 0, n)
	upWords, idBytes := 0, int64(0)
	for i := 0; i < g.n; i++ {
		if rm[i] < 0 {
			continue
		}
		old = append(old, int32(i))
		ids = append(ids, g.id(int32(i)))
		upWords += max(int(g.lvl[i]), 0) * (g.m + 1)
		idBytes += int64(len(ids[len(ids)-1]))
	}
	lay := makeLayout(n, g.dim, g.m, upWords, idBytes)
	h := sha256.New()
	f := &fileWriter{w: bufio.NewWriterSize(w, 1<<16), h: h}

	hdr := make([]byte, headerSize)
	copy(hdr, hnswMagic)
	binary.LittleEndian.PutUint16(hdr[8:], hnswVersion)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(g.dim))
	binary.LittleEndian.PutUint32(hdr[16:], uint32(g.m))
	binary.LittleEndian.PutUint32(hdr[20:], uint32(g.efC))
	binary.LittleEndian.PutUint32(hdr[24:], uint32(n))
	entry := uint32(noEntry)
	if g.entry >= 0 {
		entry = uint32(rm[g.entry])
	}
	binary.LittleEndian.PutUint32(hdr[28:], entry)
	binary.LittleEndian.PutUint32(hdr[32:], uint32(upWords))
	binary.LittleEndian.PutUint64(hdr[40:], uint64(idBytes))
	f.write(hdr)

	f.padTo(lay.levels)
	lv := make([]byte, 0, 4096)
	for _, o := range old {
		lv = append(lv, byte(g.lvl[o]))
		if len(lv) == cap(lv) {
			f.write(lv)
			lv = lv[:0]
		}
	}
	f.write(lv)

	f.padTo(lay.vecs)
	vb := make([]byte, 4*g.dim)
	for _, o := range old {
		for j, x := range g.vec(o) {
			binary.LittleEndian.PutUint32(vb[4*j:], math.Float32bits(x))
		}
		f.write(vb)
	}

	// Links are written as count, remapped links, zeros: what follows a
	// list's count in memory is left over from earlier lists.
	words := make([]uint32, g.m0+1)
	list := func(s []int32, room int) {
		words := words[:room+1]
		clear(words)
		words[0] = uint32(s[0])
		for j := 1; j <= int(s[0]); j++ {
			words[j] = uint32(rm[s[j]])
		}
		f.u32s(words...)
	}
	f.padTo(lay.l0)
	for _, o := range old {
		list(g.slot(o, 0), g.m0)
	}
	f.padTo(lay.uo)
	acc := uint32(0)
	f.u32s(acc)
	for _, o := range old {
		acc += uint32(max(int(g.lvl[o]), 0) * (g.m + 1))
		f.u32s(acc)
	}
	f.padTo(lay.upa)
	for _, o := range old {
		for lc := 1; lc <= int(g.lvl[o]); lc++ {
			list(g.slot(o, lc), g.m)
		}
	}
	f.padTo(lay.idOff)
	var off [8]byte
	pos := uint64(0)
	f.write(off[:])
	for _, id := range ids {
		pos += uint64(len(id))
		binary.LittleEndian.PutUint64(off[:], pos)
		f.write(off[:])
	}
	f.padTo(lay.ids)
	for _, id := range ids {
		f.write([]byte(id))
	}
	f.padTo(lay.sorted)
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int { return strings.Compare(ids[a], ids[b]) })
	pb := make([]byte, 0, 4096)
	for _, p := range perm {
		pb = binary.LittleEndian.AppendUint32(pb, uint32(p))
		if len(pb) == cap(pb) {
			f.write(pb)
			pb = pb[:0]
		}
	}
	f.write(pb)
	f.padTo(lay.trailer)
	if f.err == nil {
		sum := h.Sum(nil)
		_, f.err = f.w.Write(sum)
		f.n += int64(len(sum))
	}
	if f.err == nil {
		f.err = f.w.Flush()
	}
	if f.err != nil {
		return f.n, fmt.Errorf("write graph: %w", f.err)
	}
	return f.n, nil
}

// MarshalBinary encodes the graph in the documented form (WriteTo into
// memory).
func (g *HNSW) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	if _, err := g.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// graphFile is the image of a version-2 graph file that slots below nbase
// point into: mapped copy-on-write (a write to the graph changes this
// process's pages, never the file) or read into memory.
type graphFile struct {
	data    []byte
	idOff   []uint64
	ids     []byte
	sorted  []int32
	written bool // the graph has changed pages of data
	unmap   func() error
	// f is the mapped file (nil when its bytes were read into memory) and
	// vecOff where its vectors start: the first searches of a process read
	// vectors with pread (see coldSearches).
	f        *os.File
	vecOff   int64
	searches atomic.Int32
}

func (f *graphFile) id(i int32) string { return string(f.ids[f.idOff[i]:f.idOff[i+1]]) }

// find returns the slot of id through the sorted table (binary search).
func (f *graphFile) find(id string) (int32, bool) {
	lo, hi := 0, len(f.sorted)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		x := f.sorted[mid]
		if string(f.ids[f.idOff[x]:f.idOff[x+1]]) < id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(f.sorted) {
		x := f.sorted[lo]
		if string(f.ids[f.idOff[x]:f.idOff[x+1]]) == id {
			return x, true
		}
	}
	return 0, false
}

var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// The casts view a section as its element type in place (sections are
// 64-byte aligned and little-endian); on a big-endian host they decode a
// copy. Capacity equals length, so an append never writes into the next
// section.
func castI32(b []byte, off int64, n int) []int32 {
	if n == 0 {
		return []int32{}
	}
	s := b[off : off+4*int64(n)]
	if hostLittleEndian {
		return unsafe.Slice((*int32)(unsafe.Pointer(&s[0])), n)
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(s[4*i:]))
	}
	return out
}

func castF32(b []byte, off int64, n int) []float32 {
	if n == 0 {
		return []float32{}
	}
	s := b[off : off+4*int64(n)]
	if hostLittleEndian {
		return unsafe.Slice((*float32)(unsafe.Pointer(&s[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(s[4*i:]))
	}
	return out
}

func castU64(b []byte, off int64, n int) []uint64 {
	s := b[off : off+8*int64(n)]
	if hostLittleEndian {
		return unsafe.Slice((*uint64)(unsafe.Pointer(&s[0])), n)
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(s[8*i:])
	}
	return out
}

func castI8(b []byte, off int64, n int) []int8 {
	if n == 0 {
		return []int8{}
	}
	s := b[off : off+int64(n)]
	return unsafe.Slice((*int8)(unsafe.Pointer(&s[0])), n)
}

// fromImage points a new graph at a version-2 image after checking only
// what costs nothing to check: the header, the size, and the entry point's
// level. Everything else is read when a search reaches it; a damaged image
// makes a search fail a bounds check (a panic, which the caller recovers
// as damage) or return poor hits, never read outside the image. verify
// checks everything.
func fromImage(data []byte, efS int) (*HNSW, error) {
	if len(data) < headerSize+sha256.Size {
		return nil, fmt.Errorf("decode index: %d bytes is too short: %w", len(data), ErrCorrupt)
	}
	if string(data[:len(hnswMagic)]) != hnswMagic {
		return nil, fmt.Errorf("decode index: bad magic %q, want %q: %w", data[:len(hnswMagic)], hnswMagic, ErrCorrupt)
	}
	le := binary.LittleEndian
	if v := le.Uint16(data[8:]); v != hnswVersion {
		return nil, fmt.Errorf("decode index: unsupported version %d, want %d: %w", v, hnswVersion, ErrCorrupt)
	}
	dim, m, efC := int(le.Uint32(data[12:])), int(le.Uint32(data[16:])), int(le.Uint32(data[20:]))
	n, entry, upWords := int(le.Uint32(data[24:])), le.Uint32(data[28:]), int(le.Uint32(data[32:]))
	idBytes := le.Uint64(data[40:])
	switch {
	case le.Uint16(data[10:]) != 0 || le.Uint32(data[36:]) != 0 || !isZeroBytes(data[48:headerSize]):
		return nil, fmt.Errorf("decode index: reserved header bytes set: %w", ErrCorrupt)
	case dim <= 0 || dim > MaxDim, m < 2 || m > 1024, efC < 1 || efC > 1<<20:
		return nil, fmt.Errorf("decode index: bad parameters dim=%d M=%d ef=%d: %w", dim, m, efC, ErrCorrupt)
	case int64(n) > int64(len(data))/int64(4*dim) || int64(upWords) > int64(len(data))/4 || idBytes > uint64(len(data)):
		return nil, fmt.Errorf("decode index: sizes exceed data: %w", ErrCorrupt)
	case entry != noEntry && entry >= uint32(n):
		return nil, fmt.Errorf("decode index: entry %d out of range: %w", entry, ErrCorrupt)
	}
	lay := makeLayout(n, dim, m, upWords, int64(idBytes))
	if lay.size != int64(len(data)) {
		return nil, fmt.Errorf("decode index: %d bytes, header implies %d: %w", len(data), lay.size, ErrCorrupt)
	}
	g := &HNSW{dim: dim, efS: efS}
	g.reset(m, efC)
	f := &graphFile{data: data, vecOff: lay.vecs}
	f.idOff = castU64(data, lay.idOff, n+1)
	f.ids = data[lay.ids : lay.ids+int64(idBytes) : lay.ids+int64(idBytes)]
	f.sorted = castI32(data, lay.sorted, n)
	g.file = f
	g.n, g.nbase, g.live = n, n, n
	g.lvl = castI8(data, lay.levels, n)
	g.base = castF32(data, lay.vecs, n*dim)
	g.l0 = castI32(data, lay.l0, n*(g.m0+1))
	g.uo = castI32(data, lay.uo, n+1)
	g.upa = castI32(data, lay.upa, upWords)
	if g.uo[0] != 0 || int(g.uo[n]) != upWords || f.idOff[0] != 0 || f.idOff[n] != idBytes {
		return nil, fmt.Errorf("decode index: offsets do not span their sections: %w", ErrCorrupt)
	}
	if entry != noEntry {
		g.entry, g.maxLevel = int32(entry), int(g.lvl[entry])
		if g.maxLevel < 0 {
			return nil, fmt.Errorf("decode index: entry %d has no level: %w", entry, ErrCorrupt)
		}
	}
	return g, nil
}

func isZeroBytes(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// verify checks an image-backed graph completely: the trailer, then every
// rule the encoder follows (ids valid, unique and in the sorted table's
// order; levels derived from ids; unit or zero vectors; links in range, to
// nodes present on their layer, zero-padded; the entry point).
func (g *HNSW) verify() error {
	f := g.file
	data := f.data
	body := data[:len(data)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return fmt.Errorf("decode index: checksum mismatch: %w", ErrCorrupt)
	}
	n := g.n
	for i := 0; i < n; i++ {
		if f.idOff[i] > f.idOff[i+1] || f.idOff[i+1] > uint64(len(f.ids)) {
			return fmt.Errorf("decode index: id offsets not increasing at %d: %w", i, ErrCorrupt)
		}
	}
	seen := make([]bool, n)
	prev := ""
	for j, x := range f.sorted {
		if x < 0 || int(x) >= n || seen[x] {
			return fmt.Errorf("decode index: sorted table is not a permutation: %w", ErrCorrupt)
		}
		seen[x] = true
		id := f.id(x)
		if checkID(id) != nil {
			return fmt.Errorf("decode index: node %d has invalid id: %w", x, ErrCorrupt)
		}
		if j > 0 && id <= prev {
			return fmt.Errorf("decode index: ids out of order or duplicated at %q: %w", id, ErrCorrupt)
		}
		prev = id
	}
	for i := 0; i < n; i++ {
		x := int32(i)
		lv := int(g.lvl[i])
		if lv < levelZero || lv > maxLevelCap || (lv >= 0 && lv != levelFor(f.id(x), g.m)) {
			return fmt.Errorf("decode index: node %d level %d invalid: %w", i, lv, ErrCorrupt)
		}
		v := g.vec(x)
		for _, c := range v {
			if math.IsNaN(float64(c)) || math.IsInf(float64(c), 0) {
				return fmt.Errorf("decode index: node %d vector not finite: %w", i, ErrCorrupt)
			}
		}
		if !checkStoredVector(v) || (lv == levelZero) != isZero(v) {
			return fmt.Errorf("decode index: node %d vector invalid: %w", i, ErrCorrupt)
		}
		if int(g.uo[i+1])-int(g.uo[i]) != max(lv, 0)*(g.m+1) {
			return fmt.Errorf("decode index: node %d upper offsets wrong: %w", i, ErrCorrupt)
		}
		for lc := 0; lc <= max(lv, 0); lc++ {
			s := g.slot(x, lc)
			if s[0] < 0 || int(s[0]) > g.mmax(lc) || (lv < 0 && s[0] != 0) {
				return fmt.Errorf("decode index: node %d layer %d has %d links: %w", i, lc, s[0], ErrCorrupt)
			}
			for j, e := range s[1:] {
				if j >= int(s[0]) {
					if e != 0 {
						return fmt.Errorf("decode index: node %d layer %d padding set: %w", i, lc, ErrCorrupt)
					}
					continue
				}
				if e < 0 || int(e) >= n || e == x || int(g.lvl[e]) < lc {
					return fmt.Errorf("decode index: node %d link %d out of range: %w", i, e, ErrCorrupt)
				}
			}
		}
	}
	want, wantLevel := int32(-1), -1
	for i, lv := range g.lvl {
		if int(lv) > wantLevel {
			want, wantLevel = int32(i), int(lv)
		}
	}
	if g.entry != want {
		return fmt.Errorf("decode index: entry %d, want %d: %w", g.entry, want, ErrCorrupt)
	}
	return nil
}

// OpenHNSWFile opens a graph file written by WriteTo without decoding it:
// the file is memory-mapped (copy-on-write: later Adds and Deletes change
// this process's pages only; on systems without mmap it is read), the
// header checked, and pages read as searches reach them. VerifyFile checks
// the whole file. The mapping is released when the graph is garbage. A
// version-1 file is decoded into memory.
func OpenHNSWFile(path string, opts HNSWOptions) (*HNSW, error) {
	if opts.EfSearch == 0 {
		opts.EfSearch = DefaultEfSearch
	}
	if opts.EfSearch < 1 {
		return nil, fmt.Errorf("open graph: ef search %d: %w", opts.EfSearch, ErrInvalidOptions)
	}
	data, file, unmap, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("open graph: %w", err)
	}
	if len(data) >= len(hnswMagic)+2 && binary.LittleEndian.Uint16(data[len(hnswMagic):]) == hnswVersion1 {
		g, err := NewHNSW(1, opts)
		if err == nil {
			err = g.UnmarshalBinary(data)
		}
		if uerr := unmap(); err == nil && uerr != nil {
			err = fmt.Errorf("open graph: %w", uerr)
		}
		if err != nil {
			return nil, err
		}
		return g, nil
	}
	g, err := fromImage(data, opts.EfSearch)
	if err != nil {
		if uerr := unmap(); uerr != nil {
			err = fmt.Errorf("%w (and unmap: %v)", err, uerr)
		}
		return nil, err
	}
	g.file.unmap, g.file.f = unmap, file
	g.trk = &deltaTrack{mark: g.n, lists: map[int64]struct{}{}}
	runtime.SetFinalizer(g.file, func(f *graphFile) { _ = f.unmap() })
	return g, nil
}

// VerifyFile checks the file a graph was opened from completely (see
// verify), reading all of it. It returns nil for a graph not opened from a
// file, and for one already changed since (the pages no longer hold the
// file's bytes; the content digest still covers ids and vectors).
func (g *HNSW) VerifyFile() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.file == nil || g.file.written {
		return nil
	}
	return g.verify()
}

// touch is called before the first change to an image-backed graph.
func (g *HNSW) touch() {
	if g.file != nil {
		g.file.written = true
	}
}

// UnmarshalBinary replaces the index with data's graph (either version),
// keeping this index's EfSearch, after checking all of it. On error the
// index is unchanged.
func (g *HNSW) UnmarshalBinary(data []byte) error {
	if len(data) >= len(hnswMagic)+2 && string(data[:len(hnswMagic)]) == hnswMagic &&
		binary.LittleEndian.Uint16(data[len(hnswMagic):]) == hnswVersion1 {
		return g.unmarshalV1(data)
	}
	// A private copy: the graph writes into its image.
	img := append(make([]byte, 0, len(data)), data...)
	ng, err := fromImage(img, 1)
	if err != nil {
		return err
	}
	if err := ng.verify(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.adopt(ng)
	return nil
}

// adopt takes ng's graph (under g's write lock), keeping g's EfSearch.
func (g *HNSW) adopt(ng *HNSW) {
	g.dim, g.m, g.m0, g.efC = ng.dim, ng.m, ng.m0, ng.efC
	g.n, g.lvl, g.l0, g.uo, g.upa = ng.n, ng.lvl, ng.l0, ng.uo, ng.upa
	g.base, g.nbase, g.blocks = ng.base, ng.nbase, ng.blocks
	g.ids, g.byID, g.file = ng.ids, ng.byID, ng.file
	g.live, g.dead, g.entry, g.maxLevel, g.build = ng.live, ng.dead, ng.entry, ng.maxLevel, ng.build
	g.trk = nil
}

// unmarshalV1 decodes the version-1 format:
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
func (g *HNSW) unmarshalV1(data []byte) error {
	d, err := openSealed(data, hnswMagic, hnswVersion1)
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
	case entry != noEntry && entry >= uint32(n):
		return fmt.Errorf("decode index: entry %d out of range: %w", entry, ErrCorrupt)
	}
	ng := &HNSW{dim: dim}
	ng.reset(m, efC)
	v := make([]float32, dim)
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
		d.vec(v)
		if d.err != nil {
			return d.err
		}
		if !checkStoredVector(v) || (lv == levelZero) != isZero(v) {
			return fmt.Errorf("decode index: node %d vector invalid: %w", i, ErrCorrupt)
		}
		ng.appendVec(v)
		ng.ids = append(ng.ids, id)
		ng.byID[id] = int32(i)
		ng.n++
		ng.live++
		ng.lvl = append(ng.lvl, int8(lv))
		ng.l0 = append(ng.l0, make([]int32, ng.m0+1)...)
		ng.upa = append(ng.upa, make([]int32, max(lv, 0)*(m+1))...)
		ng.uo = append(ng.uo, int32(len(ng.upa)))
		if lv < 0 {
			continue
		}
		for lc := 0; lc <= lv; lc++ {
			k := d.uvarint("link count")
			if d.err != nil {
				return d.err
			}
			if k > uint64(ng.mmax(lc)) {
				return fmt.Errorf("decode index: node %d layer %d has %d links: %w", i, lc, k, ErrCorrupt)
			}
			s := ng.slot(int32(i), lc)
			s[0] = int32(k)
			for j := 1; j <= int(k); j++ {
				x := d.uvarint("link")
				if d.err != nil {
					return d.err
				}
				if x >= uint64(n) || x == uint64(i) {
					return fmt.Errorf("decode index: node %d link %d out of range: %w", i, x, ErrCorrupt)
				}
				s[j] = int32(x)
			}
		}
	}
	if err := d.end(); err != nil {
		return err
	}
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
	if entry != noEntry {
		got = int32(entry)
	}
	if got != want {
		return fmt.Errorf("decode index: entry %d, want %d: %w", got, want, ErrCorrupt)
	}
	ng.entry, ng.maxLevel = want, wantLevel
	g.mu.Lock()
	defer g.mu.Unlock()
	g.adopt(ng)
	return nil
}
