package log

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/wal"
)

// TestTailWriterMatchesTidwall: the log's own segment writer writes the
// files tidwall/wal's WriteBatch writes for the same entries and batch
// boundaries, byte for byte and file for file (so stores written before
// and after the writer replaced tidwall's are the same format), across
// segment cycles and a reopen.
func TestTailWriterMatchesTidwall(t *testing.T) {
	const segSize = 3000
	dir := filepath.Join(t.TempDir(), "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{Durability: None, SegmentSize: segSize})
	sizes := []int{1, 3, 7, 1, 12, 2, 9, 1, 1, 20, 4}
	n := 0
	for round, sz := range sizes {
		var batch []Entry
		for i := 0; i < sz; i++ {
			batch = append(batch, storeEntry(n))
			n++
		}
		if _, err := l.AppendBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if round == 5 { // a reopen in the middle: the writer resumes the last file
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openT(t, dir, kr, Options{Durability: None, SegmentSize: segSize})
		}
	}
	var datas [][]byte
	for seq := uint64(1); seq <= uint64(n); seq++ {
		d, err := l.readEntry(seq)
		if err != nil {
			t.Fatal(err)
		}
		datas = append(datas, append([]byte(nil), d...))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	ref := filepath.Join(t.TempDir(), "ref")
	w, err := wal.Open(ref, &wal.Options{NoSync: true, SegmentSize: segSize, LogFormat: wal.Binary})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(1)
	var wb wal.Batch
	for round, sz := range sizes {
		wb.Clear()
		for i := 0; i < sz; i++ {
			wb.Write(seq, datas[seq-1])
			seq++
		}
		if err := w.WriteBatch(&wb); err != nil {
			t.Fatal(err)
		}
		if round == 5 {
			w.Close()
			if w, err = wal.Open(ref, &wal.Options{NoSync: true, SegmentSize: segSize, LogFormat: wal.Binary}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close()

	got, want := segmentFiles(t, dir), segmentFiles(t, ref)
	if len(want) < 4 {
		t.Fatalf("reference has %d segment files; the test needs cycles", len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("%d segment files, tidwall wrote %d", len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("segment %s: %d bytes differ from tidwall's %d", name, len(got[name]), len(b))
		}
	}
}

func segmentFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, s := range segs {
		b, err := os.ReadFile(filepath.Join(dir, s.name))
		if err != nil {
			t.Fatal(err)
		}
		out[s.name] = b
	}
	return out
}

// copyDir copies the files of a log directory, as a crash would leave
// them: whatever the open writer has in them, its zero tail included.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPreallocatedTail: the open segment is preallocated (a zero tail
// after its entries); a log left like that by a crash opens without a
// repair, at the right head, and appends after its entries; a write torn
// inside the zero tail is still cut as a torn write (saved aside) or, when
// acknowledged, refused as lost; a stray byte in the tail is damage; and
// a closed log's files end at their entries.
func TestPreallocatedTail(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{SegmentSize: 1 << 20})
	appendN(t, l, 20)
	_, b := lastSegment(t, dir)
	ents := entryOffsets(t, b)
	if len(ents) != 20 || int(ents[19].end) >= len(b) || nonZeroEnd(b) > int(ents[19].end) {
		t.Skipf("no preallocation on this file system (%d entries, %d bytes)", len(ents), len(b))
	}
	crashed := filepath.Join(root, "crashed")
	copyDir(t, dir, crashed)
	// Event 21, big enough to span sectors: its bytes make the tears below.
	big := strings.Repeat("torn write test ", 100)
	if _, err := l.Append(ctx, Entry{Body: &Store{Kind: KindDocument, Content: big}}); err != nil {
		t.Fatal(err)
	}
	_, b21 := lastSegment(t, dir)
	e21 := entryOffsets(t, b21)[20]
	mark21, err := os.ReadFile(filepath.Join(dir, headMarkFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, b := lastSegment(t, dir); int64(len(b)) != e21.end {
		t.Fatalf("closed segment is %d bytes, its entries end at %d", len(b), e21.end)
	}

	// A crash with the zero tail: no repair, head 20, appends go after it.
	fresh := func(t *testing.T) string {
		d := filepath.Join(t.TempDir(), "log")
		copyDir(t, crashed, d)
		return d
	}
	t.Run("zero tail", func(t *testing.T) {
		d := fresh(t)
		c := openT(t, d, kr, Options{})
		if c.Repaired() != nil {
			t.Fatalf("zero tail repaired: %v", c.Repaired())
		}
		if h, _ := c.Head(); h != 20 {
			t.Fatalf("head %d, want 20", h)
		}
		appendN(t, c, 3)
		if got := len(collect(t, c)); got != 23 {
			t.Fatalf("%d events after appending to the crashed log", got)
		}
		c.Close()
		if _, err := VerifyDir(ctx, d, kr, nil); err != nil {
			t.Fatal(err)
		}
	})

	// Event 21 torn in the zero tail: its last sector never written (less
	// than a whole zero sector inside the entry, and the file's length says
	// nothing); unacknowledged it is cut, acknowledged it is lost.
	tear := func(t *testing.T, d string) {
		p, seg := lastSegment(t, d)
		last := int(e21.end-1) / sector * sector
		if last <= int(e21.off) || int(e21.end) > len(seg) {
			t.Fatalf("layout: entry %d..%d, file %d", e21.off, e21.end, len(seg))
		}
		copy(seg[e21.off:last], b21[e21.off:last])
		if err := os.WriteFile(p, seg, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("torn", func(t *testing.T) {
		d := fresh(t)
		tear(t, d)
		if _, err := Open(d, Options{Keys: kr, NoRepair: true}); !errors.Is(err, ErrTorn) {
			t.Fatalf("NoRepair open: %v", err)
		}
		c := openT(t, d, kr, Options{CorruptDir: filepath.Join(d, "..", "corrupt")})
		defer c.Close()
		if c.Repaired() == nil {
			t.Fatal("torn write not repaired")
		}
		if h, _ := c.Head(); h != 20 {
			t.Fatalf("head %d, want 20", h)
		}
		aside, _ := os.ReadDir(filepath.Join(d, "..", "corrupt"))
		if len(aside) != 1 {
			t.Fatalf("cut bytes kept aside: %v", aside)
		}
	})
	t.Run("torn acknowledged", func(t *testing.T) {
		d := fresh(t)
		tear(t, d)
		if err := os.WriteFile(filepath.Join(d, headMarkFile), mark21, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(d, Options{Keys: kr}); !errors.Is(err, ErrLost) {
			t.Fatalf("open: %v, want ErrLost", err)
		}
	})
	t.Run("stray byte", func(t *testing.T) {
		d := fresh(t)
		p, seg := lastSegment(t, d)
		seg[ents[19].end+700] = 1
		if err := os.WriteFile(p, seg, 0o600); err != nil {
			t.Fatal(err)
		}
		var ce *CorruptionError
		if _, err := Open(d, Options{Keys: kr}); !errors.As(err, &ce) || errors.Is(err, ErrTorn) {
			t.Fatalf("open: %v, want a CorruptionError that is not a tear", err)
		}
	})
}
