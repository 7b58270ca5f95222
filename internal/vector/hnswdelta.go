package vector

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Incremental saves. A graph file is rewritten whole by WriteTo; between
// rewrites, WriteDelta appends one record holding what changed since the
// last save (MarkSaved): the nodes added, the slots deleted, and the link
// lists of older nodes that changed. Applying the records to the file's
// graph (ApplyDeltas) rebuilds the same graph without repeating any search,
// so the work of a save, and of an open, is proportional to the change, not
// to the graph. Slots are not squeezed between saves (a deleted slot stays
// in the records as deleted); a compaction since the last save makes a
// delta impossible (ErrNoDelta), and the caller rewrites the file.
//
// Record (little-endian), appended to a delta file:
//
//	bodyLen   uint32
//	body:
//	  from    uint32            slots before this record
//	  to      uint32            slots after it
//	  entry   uint32            entry point slot, 0xFFFFFFFF if none
//	  nDead   uint32, then nDead × uint32 slot (< from, deleted since)
//	  (to-from) × new slot:
//	    id      uint16 length + bytes ("" for a slot already deleted)
//	    level   int8            0..15, -1 zero vector, -2 deleted
//	    vector  dim × float32   (zeros for a deleted slot)
//	    for each layer 0..level: count uint32, count × uint32 link
//	  nLists  uint32, then nLists × (slot uint32 (< from), layer uint32,
//	          count uint32, count × uint32 link), in (slot, layer) order
//	sha256    32 bytes over body

// ErrNoDelta is returned by WriteDelta when the changes since the last
// save cannot be written as a delta (none was marked, or slots were
// compacted since): the whole graph must be written.
var ErrNoDelta = errors.New("vector: graph changed beyond a delta")

// deltaTrack records what changed since the last save.
type deltaTrack struct {
	mark   int                // slots that existed at the last save
	lists  map[int64]struct{} // slot<<4 | layer, for slots < mark
	dead   []int32            // slots < mark deleted since
	broken bool               // compacted since
}

// MarkSaved starts collecting changes for the next WriteDelta: the graph
// as it is now is what the file and the records written so far hold.
func (g *HNSW) MarkSaved() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.trk = &deltaTrack{mark: g.n, lists: map[int64]struct{}{}}
}

// trackList notes that x's layer-lc list changed.
func (g *HNSW) trackList(x int32, lc int) {
	if t := g.trk; t != nil && int(x) < t.mark {
		t.lists[int64(x)<<4|int64(lc)] = struct{}{}
	}
}

// trackDead notes that slot x was deleted.
func (g *HNSW) trackDead(x int32) {
	if t := g.trk; t != nil && int(x) < t.mark {
		t.dead = append(t.dead, x)
	}
}

// DeltaPending reports whether changes have been made since MarkSaved.
func (g *HNSW) DeltaPending() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	t := g.trk
	return t == nil || t.broken || g.n != t.mark || len(t.lists) > 0 || len(t.dead) > 0
}

// WriteDelta writes the changes since the last MarkSaved as one record and
// marks the graph saved. It returns ErrNoDelta (writing nothing) when no
// save was marked or slots were compacted since.
func (g *HNSW) WriteDelta(w io.Writer) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.trk
	if t == nil || t.broken {
		return 0, ErrNoDelta
	}
	var body []byte
	le := binary.LittleEndian
	body = le.AppendUint32(body, uint32(t.mark))
	body = le.AppendUint32(body, uint32(g.n))
	entry := uint32(noEntry)
	if g.entry >= 0 {
		entry = uint32(g.entry)
	}
	body = le.AppendUint32(body, entry)
	dead := slices.Clone(t.dead)
	slices.Sort(dead)
	body = le.AppendUint32(body, uint32(len(dead)))
	for _, x := range dead {
		body = le.AppendUint32(body, uint32(x))
	}
	appendList := func(s []int32) {
		body = le.AppendUint32(body, uint32(s[0]))
		for _, e := range s[1 : 1+s[0]] {
			body = le.AppendUint32(body, uint32(e))
		}
	}
	for i := t.mark; i < g.n; i++ {
		x := int32(i)
		lv := int(g.lvl[i])
		id := ""
		if lv != levelDead {
			id = g.id(x)
		}
		body = le.AppendUint16(body, uint16(len(id)))
		body = append(body, id...)
		body = append(body, byte(int8(lv)))
		for _, f := range g.vec(x) {
			body = le.AppendUint32(body, math.Float32bits(f))
		}
		for lc := 0; lc <= lv; lc++ {
			appendList(g.slot(x, lc))
		}
	}
	keys := make([]int64, 0, len(t.lists))
	for k := range t.lists {
		if g.lvl[k>>4] != levelDead {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	body = le.AppendUint32(body, uint32(len(keys)))
	for _, k := range keys {
		body = le.AppendUint32(body, uint32(k>>4))
		body = le.AppendUint32(body, uint32(k&15))
		appendList(g.slot(int32(k>>4), int(k&15)))
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var n [4]byte
	le.PutUint32(n[:], uint32(len(body)))
	sum := sha256.Sum256(body)
	for _, p := range [][]byte{n[:], body, sum[:]} {
		if _, err := bw.Write(p); err != nil {
			return 0, fmt.Errorf("write graph delta: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("write graph delta: %w", err)
	}
	g.trk = &deltaTrack{mark: g.n, lists: map[int64]struct{}{}}
	return int64(4 + len(body) + sha256.Size), nil
}

// ApplyDeltas applies the records of data, in order, checking each
// completely before changing anything (on error the graph holds the
// records before the bad one). Afterwards the graph is marked saved.
func (g *HNSW) ApplyDeltas(data []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for off := 0; off < len(data); {
		if len(data)-off < 4 {
			return fmt.Errorf("decode graph delta at %d: truncated: %w", off, ErrCorrupt)
		}
		l := int(binary.LittleEndian.Uint32(data[off:]))
		if l > len(data)-off-4-sha256.Size {
			return fmt.Errorf("decode graph delta at %d: truncated: %w", off, ErrCorrupt)
		}
		body := data[off+4 : off+4+l]
		if sum := sha256.Sum256(body); string(sum[:]) != string(data[off+4+l:off+4+l+sha256.Size]) {
			return fmt.Errorf("decode graph delta at %d: checksum mismatch: %w", off, ErrCorrupt)
		}
		if err := g.applyDelta(body); err != nil {
			return fmt.Errorf("decode graph delta at %d: %w", off, err)
		}
		off += 4 + l + sha256.Size
	}
	g.trk = &deltaTrack{mark: g.n, lists: map[int64]struct{}{}}
	return nil
}

type deltaNode struct {
	id    string
	lvl   int
	vec   []float32
	lists [][]int32
}

type deltaList struct {
	x     int32
	lc    int
	links []int32
}

// applyDelta decodes one record body, checks it against the graph, then
// applies it.
func (g *HNSW) applyDelta(b []byte) error {
	d := &decoder{b: b}
	from, to, entry := int(d.u32("from")), int(d.u32("to")), d.u32("entry")
	if d.err != nil {
		return d.err
	}
	if from != g.n || to < from || to-from > len(b)/(3+4*g.dim) {
		return fmt.Errorf("slots %d..%d after %d: %w", from, to, g.n, ErrCorrupt)
	}
	nd := int(d.u32("dead count"))
	if d.err != nil || nd > len(d.b)/4 {
		return fmt.Errorf("dead count %d: %w", nd, ErrCorrupt)
	}
	dead := make([]int32, nd)
	for i := range dead {
		x := d.u32("dead slot")
		if x >= uint32(from) || g.lvl[x] == levelDead || (i > 0 && int32(x) <= dead[i-1]) {
			return fmt.Errorf("dead slot %d: %w", x, ErrCorrupt)
		}
		dead[i] = int32(x)
	}
	readList := func(lc, room int) []int32 {
		k := d.u32("link count")
		if d.err != nil || k > uint32(room) {
			d.fail("link count")
			return nil
		}
		l := make([]int32, k)
		for j := range l {
			e := d.u32("link")
			if e >= uint32(to) {
				d.fail("link")
			}
			l[j] = int32(e)
		}
		return l
	}
	nodes := make([]deltaNode, to-from)
	ids := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		k := d.u16("id length")
		if d.err != nil || int(k) > len(d.b) {
			return fmt.Errorf("node %d id: %w", from+i, ErrCorrupt)
		}
		n.id, d.b = string(d.b[:k]), d.b[k:]
		n.lvl = int(int8(d.u8("level")))
		n.vec = make([]float32, g.dim)
		d.vec(n.vec)
		if d.err != nil {
			return d.err
		}
		switch {
		case n.lvl == levelDead:
			if n.id != "" || !isZero(n.vec) {
				return fmt.Errorf("deleted node %d holds data: %w", from+i, ErrCorrupt)
			}
			continue
		case checkID(n.id) != nil || ids[n.id]:
			return fmt.Errorf("node %d id invalid or repeated: %w", from+i, ErrCorrupt)
		case n.lvl < levelZero || n.lvl > maxLevelCap || (n.lvl >= 0 && n.lvl != levelFor(n.id, g.m)):
			return fmt.Errorf("node %d level %d invalid: %w", from+i, n.lvl, ErrCorrupt)
		case !checkStoredVector(n.vec) || (n.lvl == levelZero) != isZero(n.vec):
			return fmt.Errorf("node %d vector invalid: %w", from+i, ErrCorrupt)
		}
		if x, ok := g.lookup(n.id); ok && !containsSorted(dead, x) {
			return fmt.Errorf("node %d id %q already live: %w", from+i, n.id, ErrCorrupt)
		}
		ids[n.id] = true
		for lc := 0; lc <= n.lvl; lc++ {
			n.lists = append(n.lists, readList(lc, g.mmax(lc)))
		}
		if d.err != nil {
			return d.err
		}
	}
	deadSet := make(map[int32]bool, len(dead))
	for _, x := range dead {
		deadSet[x] = true
	}
	levelOf := func(x int32) int {
		if int(x) >= from {
			return nodes[int(x)-from].lvl
		}
		if deadSet[x] {
			return levelDead
		}
		return int(g.lvl[x])
	}
	nl := int(d.u32("list count"))
	if d.err != nil || nl > len(d.b)/12 {
		return fmt.Errorf("list count %d: %w", nl, ErrCorrupt)
	}
	lists := make([]deltaList, nl)
	for i := range lists {
		x, lc := d.u32("list slot"), d.u32("list layer")
		if d.err != nil || x >= uint32(from) || lc > maxLevelCap || int(lc) > levelOf(int32(x)) ||
			(i > 0 && int64(x)<<4|int64(lc) <= int64(lists[i-1].x)<<4|int64(lists[i-1].lc)) {
			return fmt.Errorf("list %d of slot %d layer %d: %w", i, x, lc, ErrCorrupt)
		}
		lists[i] = deltaList{int32(x), int(lc), readList(int(lc), g.mmax(int(lc)))}
		if d.err != nil {
			return d.err
		}
	}
	if err := d.end(); err != nil {
		return err
	}
	// Every link must reach a live node present on its layer.
	check := func(x int32, lc int, l []int32) error {
		for _, e := range l {
			if e == x || levelOf(e) < lc {
				return fmt.Errorf("slot %d layer %d links to %d: %w", x, lc, e, ErrCorrupt)
			}
		}
		return nil
	}
	for i, n := range nodes {
		for lc, l := range n.lists {
			if err := check(int32(from+i), lc, l); err != nil {
				return err
			}
		}
	}
	for _, l := range lists {
		if err := check(l.x, l.lc, l.links); err != nil {
			return err
		}
	}
	wantEntry, wantLevel := int32(-1), -1
	for x := 0; x < to; x++ {
		if lv := levelOf(int32(x)); lv > wantLevel {
			wantEntry, wantLevel = int32(x), lv
		}
	}
	if (entry == noEntry) != (wantEntry < 0) || (entry != noEntry && int32(entry) != wantEntry) {
		return fmt.Errorf("entry %d, want %d: %w", int32(entry), wantEntry, ErrCorrupt)
	}

	// Apply: the record is consistent.
	g.touch()
	for _, x := range dead {
		if int(x) >= g.nbase {
			delete(g.byID, g.ids[int(x)-g.nbase])
			g.ids[int(x)-g.nbase] = ""
		}
		for lc := 0; lc <= max(int(g.lvl[x]), 0); lc++ {
			g.slot(x, lc)[0] = 0
		}
		g.lvl[x] = levelDead
		clear(g.vec(x))
		g.live--
		g.dead++
	}
	for _, n := range nodes {
		idx := int32(g.n)
		g.appendVec(n.vec)
		g.ids = append(g.ids, n.id)
		if n.lvl != levelDead {
			g.byID[n.id] = idx
			g.live++
		} else {
			g.dead++
		}
		g.n++
		g.lvl = append(g.lvl, int8(n.lvl))
		g.l0 = append(g.l0, make([]int32, g.m0+1)...)
		g.upa = append(g.upa, make([]int32, max(n.lvl, 0)*(g.m+1))...)
		g.uo = append(g.uo, int32(len(g.upa)))
		for lc, l := range n.lists {
			s := g.slot(idx, lc)
			s[0] = int32(copy(s[1:], l))
		}
	}
	for _, l := range lists {
		s := g.slot(l.x, l.lc)
		s[0] = int32(copy(s[1:], l.links))
	}
	g.entry, g.maxLevel = wantEntry, wantLevel
	return nil
}

func containsSorted(s []int32, x int32) bool {
	_, ok := slices.BinarySearch(s, x)
	return ok
}
