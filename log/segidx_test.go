package log

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// smallSegs makes logs of many segment files.
var smallSegs = Options{SegmentSize: 4 << 10}

// wholeRaws returns every event's raw bytes, read by a range read.
func wholeRaws(t *testing.T, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	err := l.Records(ctx, 0, 0, func(r *Record) error {
		out = append(out, append([]byte(nil), r.Raw...))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sidecars(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+segIdxSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkRandomReads reads n random seqs by Raw and compares them with want.
func checkRandomReads(t *testing.T, l *Log, want [][]byte, n int, seed int64) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < n; i++ {
		seq := uint64(rng.Intn(len(want))) + 1
		raw, err := l.Raw(seq)
		if err != nil {
			t.Fatalf("raw %d: %v", seq, err)
		}
		if !bytes.Equal(raw, want[seq-1]) {
			t.Fatalf("raw %d differs from the range read", seq)
		}
	}
}

// TestSegIndexReadsMatchWholeReads: random reads by seq over many segments
// return the bytes a range read returns, in this process (sidecars written
// by the reads) and in the next (sidecars reused, no whole-segment parse).
func TestSegIndexReadsMatchWholeReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, smallSegs)
	res := appendN(t, l, 600)
	segs, err := listSegments(dir)
	if err != nil || len(segs) < 10 {
		t.Fatalf("want many segments, got %d (%v)", len(segs), err)
	}
	// Random reads first, before any range read has written a sidecar.
	for _, r := range res {
		raw, err := l.Raw(r.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if HashRaw(raw) != r.Hash {
			t.Fatalf("seq %d: hash differs from the appended event", r.Seq)
		}
	}
	if got := l.idx.wholeParses.Load(); got != int64(len(segs)) {
		t.Fatalf("%d whole-segment parses for %d segments", got, len(segs))
	}
	if n := len(sidecars(t, dir)); n != len(segs)-1 {
		t.Fatalf("%d sidecars, want one per sealed segment (%d)", n, len(segs)-1)
	}
	want := wholeRaws(t, l)
	checkRandomReads(t, l, want, 2000, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openT(t, dir, kr, smallSegs)
	defer l.Close()
	checkRandomReads(t, l, want, 2000, 2)
	// No segment is parsed again: the sealed ones' offsets come from their
	// sidecars, the last one's from Open's tail verification.
	if got := l.idx.wholeParses.Load(); got != 0 {
		t.Fatalf("%d whole-segment parses after reopen, want 0", got)
	}
	// Appends into new segments are read too.
	more := appendN(t, l, 200)
	for _, r := range more {
		raw, err := l.Raw(r.Seq)
		if err != nil || HashRaw(raw) != r.Hash {
			t.Fatalf("seq %d after appends: %v", r.Seq, err)
		}
	}
	checkRandomReads(t, l, wholeRaws(t, l), 2000, 3)
}

// TestSegIndexConcurrentReaders reads at random from many goroutines while
// an appender grows the log across segments (run with -race), with few
// files open at a time so they are closed and reopened under the readers.
func TestSegIndexConcurrentReaders(t *testing.T) {
	defer func(n int) { segIdxOpenFiles = n }(segIdxOpenFiles)
	segIdxOpenFiles = 4
	dir := filepath.Join(t.TempDir(), "log")
	l := openT(t, dir, testKeys(t), smallSegs)
	defer l.Close()
	res := appendN(t, l, 300)
	var mu sync.Mutex
	hashes := map[uint64]Hash{}
	for _, r := range res {
		hashes[r.Seq] = r.Hash
	}
	var wg sync.WaitGroup
	errc := make(chan error, 9)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 300; i++ {
			r, err := l.Append(ctx, storeEntry(i))
			if err != nil {
				errc <- err
				return
			}
			mu.Lock()
			hashes[r.Seq] = r.Hash
			mu.Unlock()
		}
	}()
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 1500; i++ {
				head, _ := l.Head()
				seq := uint64(rng.Intn(int(head))) + 1
				raw, err := l.Raw(seq)
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				h, ok := hashes[seq]
				mu.Unlock()
				if ok && HashRaw(raw) != h {
					errc <- errors.New("a concurrent read returned another event")
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// TestSegIndexBadSidecars: a sidecar that is torn, flipped, for another
// file size, or points at the wrong entries is not trusted: reads return
// the right events, and the sidecar is rebuilt as it should be.
func TestSegIndexBadSidecars(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, smallSegs)
	appendN(t, l, 400)
	want := wholeRaws(t, l) // the range read writes the sidecars
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, segs[2].name+segIdxSuffix)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, size, offs, err := decodeSegIndex(good)
	if err != nil || first != segs[2].first || len(offs) < 3 {
		t.Fatalf("sidecar %v %d %v", err, first, offs)
	}
	skipped := append(append([]int64{}, offs[:1]...), offs[2:]...) // entry 1 -> entry 2's bytes
	// Entries 1 and 2 swapped, checksum good: a read of entry 1 would span
	// backwards (the table is read in place, not decoded and checked).
	swapped := append([]int64{}, offs...)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	cases := map[string][]byte{
		"torn":          good[:len(good)/2],
		"flipped":       append(append([]byte{}, good[:20]...), append([]byte{good[20] ^ 1}, good[21:]...)...),
		"other size":    encodeSegIndex(first, size+1, offs),
		"other first":   encodeSegIndex(first+1, size, offs),
		"wrong entries": encodeSegIndex(first, size, skipped),
		"out of order":  encodeSegIndex(first, size, swapped),
		"past the file": encodeSegIndex(first, size, append(append([]int64{}, offs[:len(offs)-1]...), size+8)),
	}
	for name, side := range cases {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, side, 0o600); err != nil {
				t.Fatal(err)
			}
			// A temporary file left by a crash mid-write is ignored.
			if err := os.WriteFile(path+".123.tmp", side[:len(side)/3], 0o600); err != nil {
				t.Fatal(err)
			}
			l := openT(t, dir, kr, smallSegs)
			defer l.Close()
			for k := range offs {
				seq := first + uint64(k)
				raw, err := l.Raw(seq)
				if err != nil {
					t.Fatalf("raw %d: %v", seq, err)
				}
				if !bytes.Equal(raw, want[seq-1]) {
					t.Fatalf("raw %d differs from the range read", seq)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("sidecar not rebuilt: %v", err)
			}
			if !bytes.Equal(got, good) {
				t.Fatal("rebuilt sidecar differs from the original")
			}
		})
	}
}

// TestSegIndexCorruptionReported: damage in an entry of a sealed segment
// with a good sidecar is reported by the read as it is without one.
func TestSegIndexCorruptionReported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, smallSegs)
	appendN(t, l, 200)
	wholeRaws(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, segs[1].name+segIdxSuffix))
	if err != nil {
		t.Fatal(err)
	}
	_, _, offs, err := decodeSegIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, segs[1].name)
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[offs[1]+HeaderSize+5] ^= 0x40 // inside entry 1's sealed body
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, kr, smallSegs)
	defer l.Close()
	seq := segs[1].first + 1
	_, err = l.Raw(seq)
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) || ce.Seq != seq {
		t.Fatalf("raw of a flipped entry: %v", err)
	}
	if _, err := l.Raw(seq + 1); err != nil {
		t.Fatalf("the entry after the damage: %v", err)
	}
}

// TestSegIndexCutRemovesSidecars: cutting the log deletes the sidecars of
// the segments cut.
func TestSegIndexCutRemovesSidecars(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openT(t, dir, testKeys(t), smallSegs)
	appendN(t, l, 300)
	wholeRaws(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(segs) / 2
	if err := truncateAfter(dir, segs[cut].first+1); err != nil {
		t.Fatal(err)
	}
	for i, s := range segs[:len(segs)-1] {
		_, err := os.Stat(filepath.Join(dir, s.name+segIdxSuffix))
		if i < cut && err != nil {
			t.Fatalf("sidecar of kept segment %d: %v", i, err)
		}
		if i >= cut && !os.IsNotExist(err) {
			t.Fatalf("sidecar of cut segment %d still there: %v", i, err)
		}
	}
}

func TestSegIndexGolden(t *testing.T) {
	got := hex.EncodeToString(encodeSegIndex(42, 300, []int64{0, 100, 250})) + "\n"
	path := filepath.Join("testdata", "golden", "segment_index.hex")
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("segment index format changed:\n got %s\nwant %s", got, want)
	}
	b, _ := hex.DecodeString(string(want[:len(want)-1]))
	first, size, offs, err := decodeSegIndex(b)
	if err != nil || first != 42 || size != 300 || len(offs) != 3 || offs[2] != 250 {
		t.Fatalf("golden does not decode: %d %d %v %v", first, size, offs, err)
	}
}

func FuzzDecodeSegIndex(f *testing.F) {
	f.Add(encodeSegIndex(42, 300, []int64{0, 100, 250}))
	f.Add(encodeSegIndex(1, 1, []int64{0}))
	f.Add([]byte(segIdxMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		first, size, offs, err := decodeSegIndex(b)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeSegIndex(first, size, offs), b) {
			t.Fatal("segment index does not round-trip")
		}
	})
}
