package timelines

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

func goldenChunks() []*Chunk {
	full := &Chunk{
		ID: "doc#1", Seq: 4312, EventID: "00112233445566778899aabbccddeeff", AppendTime: 1795377190924,
		Time: -1673745330000, Kind: log.KindToolCall, Session: "s1", Role: "assistant",
		Content: "résumé\n\tindented", Meta: map[string]string{"b": "2", "a": "1"}, Parent: "p",
		ChunkParent: "doc", ChunkIndex: 1, Tool: &log.ToolCall{Name: "grep", Args: `{"q":"x"}`, Status: "ok"},
		Supersedes: []string{"old1", "old2"}, EditedBy: "ffeeddccbbaa99887766554433221100", Edited: true, Order: 17,
	}
	full.Sum = full.ContentSum()
	self := &Chunk{ID: "0018d5e3c1b9302c4116781332bbb525", Seq: 1, EventID: "0018d5e3c1b9302c4116781332bbb525",
		AppendTime: 1, Time: 2, Kind: log.KindConversation, Session: "r0-c0-s1", Role: "user", Content: "Caroline: Hey Mel!"}
	self.Sum = self.ContentSum()
	// A role without a one-byte code is spelled out.
	other := &Chunk{ID: "c-1-10", Seq: 10, EventID: "facdca425e2dbb1f63d92aa987eccf13",
		AppendTime: 3, Time: 4, Kind: log.KindConversation, Session: "s2", Role: "narrator", Content: "once"}
	other.Sum = other.ContentSum()
	return []*Chunk{full, self, other}
}

// The chunk record is frozen: a change needs a new Version (and so a
// rebuild). UCL_UPDATE_GOLDEN=1 rewrites the golden file.
func TestRecordGolden(t *testing.T) {
	var b strings.Builder
	for _, c := range goldenChunks() {
		enc, err := encodeChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %x\n", c.ID, enc)
		back, err := decodeChunk(c.ID, enc)
		if err != nil {
			t.Fatal(err)
		}
		if back.Content != "" {
			t.Fatalf("content %q in the record", back.Content)
		}
		back.Content = c.Content // read back from the event at seq
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, c)
		}
		if back.ContentSum() != c.Sum {
			t.Fatal("sum changed in the round trip")
		}
	}
	got := []byte(b.String())
	path := filepath.Join("testdata", "record.golden")
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
		t.Fatalf("chunk record format changed:\n got %s\nwant %s", got, want)
	}
}

func TestDecodeChunkRefusesDamage(t *testing.T) {
	c := goldenChunks()[0]
	enc, err := encodeChunk(c)
	if err != nil {
		t.Fatal(err)
	}
	bad := [][]byte{nil, {}, enc[:len(enc)-1], append(append([]byte{}, enc...), 0), append([]byte{0x80}, enc[1:]...)}
	// An overlong varint for the seq.
	over := append([]byte{enc[0]}, 0x80|byte(c.Seq&0x7f))
	over = append(over, byte(c.Seq>>7)|0x80, 0)
	bad = append(bad, append(over, enc[3:]...))
	for _, b := range bad {
		if _, err := decodeChunk(c.ID, b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, want ErrCorrupt", b, err)
		}
	}
	c.Sum = "not hex"
	if _, err := encodeChunk(c); err == nil {
		t.Fatal("encoded a chunk without a sum")
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, c := range goldenChunks() {
		enc, err := encodeChunk(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c.ID, enc)
		f.Add(c.ID, enc[:len(enc)/2])
	}
	f.Add("x", []byte{})
	f.Add("x", bytes.Repeat([]byte{0xff}, 80))
	f.Fuzz(func(t *testing.T, id string, b []byte) {
		c, err := decodeChunk(id, b)
		if err != nil {
			return
		}
		enc, err := encodeChunk(c)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("decoded %+v re-encodes differently:\n%x\n%x", c, enc, b)
		}
	})
}
