package dedup

import (
	"bytes"
	"fmt"
	"github.com/unlimitedcontext/ucl/projections"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

func goldenItem() *Item {
	it := &Item{ChunkID: "doc#1", Kind: log.KindDocument, Seq: 42, Time: 1683554160000, ChunkIndex: 1,
		Session: "s1", Role: "user", ChunkParent: "doc"}
	it.Content = Hash("Hello  World")
	return it
}

// The stored format and the normalization rule are frozen: a change
// needs a new FormatVersion (and so a rebuild).
func TestFormatGolden(t *testing.T) {
	it := goldenItem()
	var b strings.Builder
	fmt.Fprintf(&b, "item %x\n", encodeItem(it))
	fmt.Fprintf(&b, "key %x\n", append(keyPrefix(it.Session, it.Role, it.Kind, it.Content), projections.IDKey(it.ChunkID)...))
	for _, id := range []string{"000102030405060708090a0b0c0d0e0f", "000102030405060708090A0B0C0D0E0F", "doc#1", ""} {
		fmt.Fprintf(&b, "id %q -> %x\n", id, projections.IDKey(id))
	}
	fmt.Fprintf(&b, "doc %x\n", docKey(it.ChunkParent, it.ChunkIndex))
	for _, s := range []string{"Hello  World", " \u00a0Tabs\tand\nNEW\u200blines ", "ÉCOLE ﬁne Straße", ""} {
		fmt.Fprintf(&b, "normalize %q -> %q %x\n", s, Normalize(s), Hash(s))
	}
	got := []byte(b.String())
	path := filepath.Join("testdata", "format.golden")
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("dedup format changed:\n got %s\nwant %s", got, want)
	}
	back, err := decodeItem(it.ChunkID, encodeItem(it))
	if err != nil || *back != *it {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

func FuzzDecodeItem(f *testing.F) {
	enc := encodeItem(goldenItem())
	f.Add(enc)
	f.Add(enc[:len(enc)-1])
	f.Add(append(enc, 0))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 120))
	f.Add(append([]byte{1, 0x80, 0}, enc[2:]...)) // an overlong seq
	f.Fuzz(func(t *testing.T, b []byte) {
		it, err := decodeItem("x", b)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeItem(it), b) {
			t.Fatalf("decoded %+v re-encodes differently", it)
		}
	})
}

func FuzzIDKey(f *testing.F) {
	f.Add(projections.IDKey("000102030405060708090a0b0c0d0e0f"))
	f.Add(projections.IDKey("doc#1"))
	f.Add(append([]byte{1}, "000102030405060708090a0b0c0d0e0f"...)) // must be the short form
	f.Add([]byte{0, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, k []byte) {
		id, ok := projections.IDOfKey(k)
		if !ok {
			return
		}
		if !bytes.Equal(projections.IDKey(id), k) {
			t.Fatalf("key %x decodes to %q, which is stored as %x", k, id, projections.IDKey(id))
		}
	})
}
