package log

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
)

// Golden files freeze the wire format. Regenerate only on a deliberate
// format change: UCL_UPDATE_GOLDEN=1 go test ./log -run Golden
var goldenBodies = []struct {
	name string
	body Body
}{
	{"store_minimal", &Store{Kind: KindConversation, Session: "s1", Role: "user", Content: "hello"}},
	{"store_full", &Store{ChunkID: "doc-7#2", Kind: KindDocument, Session: "s1", Role: "tool", Content: "chunk two",
		Meta: map[string]string{"b": "2", "a": "1"}, Parent: "turn-1", ChunkParent: "doc-7", ChunkIndex: 2, Time: 1683554160000}},
	{"tombstone", &Tombstone{Chunks: []string{"c1", "c2"}, Session: "s9", From: 1000, To: 2000, Reason: "user asked"}},
	{"share_grant", &ShareGrant{Grantee: "addr", ShareKey: []byte{1, 2, 3}, Sessions: []string{"s1"}, Chunks: []string{"c1"},
		Keys: []WrappedKey{{Seq: 7, Wrapped: [40]byte{9}}}}},
	{"share_grant_v2", &ShareGrant{Grantee: "addr", ShareKey: []byte{1, 2, 3}, Chunks: []string{"c1", "c2"},
		Keys: []WrappedKey{{Seq: 7, Wrapped: [40]byte{9}}}, Follow: true, Note: "for the review", OwnKey: bytes.Repeat([]byte{5}, ShareKeySize)}},
	{"share_grant_v3", &ShareGrant{Grantee: "addr", ShareKey: []byte{1, 2, 3}, Sessions: []string{"s1"}, Chunks: []string{"c1", "c2"},
		Seqs: []uint64{7, 300}, Follow: true, Note: "for the review", OwnKey: bytes.Repeat([]byte{5}, ShareKeySize)}},
	{"share_revoke", &ShareRevoke{Grant: ID{0xaa}, Grantee: "addr", Reason: "done"}},
	{"rekey", &Rekey{Epoch: 2, Keys: []WrappedKey{{Seq: 1, Wrapped: [40]byte{1}}, {Seq: 3, Wrapped: [40]byte{3}}}}},
	{"store_tool", &Store{Kind: KindToolCall, Session: "s1", Role: "assistant", Content: "22C, sunny", Parent: "turn-3",
		Tool: &ToolCall{Name: "get_weather", Args: `{"city":"Berlin"}`, Status: "ok"}}},
	{"store_supersedes", &Store{Kind: KindKnowledge, Session: "s1", Role: "user", Content: "moved to Berlin",
		Supersedes: []string{"fact-1", "fact-2"}}},
	{"edit", &Edit{Target: "doc-7", Prev: 17, By: "alice", Removes: []string{"doc-7#2"},
		Store: Store{ChunkID: "doc-7#0", Kind: KindDocument, Session: "s1", Role: "user", Content: "new text",
			ChunkParent: "doc-7", Time: 1683554160000, Meta: map[string]string{"v": "2"}}}},
}

func goldenHeader(t Type) Header {
	return Header{Version: FormatVersion1, Type: t, Seq: 42, Time: 1700000000123, ID: ID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		KeyEpoch: 1, Prev: Hash{0xde, 0xad}}
}

// TestGolden freezes format 1 (a random DEK per event, wrapped in its
// header), which logs written before format 2 hold and this build reads.
func TestGolden(t *testing.T) {
	kek := bytes.Repeat([]byte{7}, 32)
	dek := bytes.Repeat([]byte{9}, 32)
	w, _ := crypto.NewWrapper(kek)
	kr, _ := crypto.KeyringFrom(map[uint32][]byte{1: kek})
	update := os.Getenv("UCL_UPDATE_GOLDEN") != ""
	for _, g := range goldenBodies {
		t.Run(g.name, func(t *testing.T) {
			h := goldenHeader(g.body.Type())
			plain, err := EncodeBody(g.body, &h)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := sealWith(&h, plain, dek, w)
			if err != nil {
				t.Fatal(err)
			}
			got := "body " + hex.EncodeToString(plain) + "\nraw " + hex.EncodeToString(raw) + "\n"
			path := filepath.Join("testdata", "golden", g.name+".hex")
			if update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (regenerate with UCL_UPDATE_GOLDEN=1)", err)
			}
			if got != string(want) {
				t.Fatalf("encoding changed for %s:\n got %s\nwant %s", g.name, got, want)
			}
			// And it decodes back to the same body.
			ev, err := DecryptWith(kr, raw)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := EncodeBody(ev.Body, &ev.Header)
			if !bytes.Equal(again, plain) || ev.Header != h {
				t.Fatal("round trip changed the event")
			}
		})
	}
}

// TestGoldenV2 freezes format 2: the header wraps the batch key of its
// append request, and the DEK is derived from it and the event id
// (crypto.BatchKey); bodies are sealed with AES-256-GCM. Files
// testdata/golden/v2_*.hex.
func TestGoldenV2(t *testing.T) { testGoldenBatchKeyed(t, FormatVersion2, "v2_") }

// TestGoldenV3 freezes format 3: format 2's keys, bodies sealed with
// ChaCha20-Poly1305. Files testdata/golden/v3_*.hex.
func TestGoldenV3(t *testing.T) { testGoldenBatchKeyed(t, FormatVersion3, "v3_") }

// TestGoldenV4 freezes format 4: format 3 sealed with the header's
// version, type, time and id as associated data, and hashed as
// SHA-256(header ‖ SHA-256(body)); the files add the hash. Files
// testdata/golden/v4_*.hex.
func TestGoldenV4(t *testing.T) { testGoldenBatchKeyed(t, FormatVersion, "v4_") }

func testGoldenBatchKeyed(t *testing.T, version uint8, prefix string) {
	kek := bytes.Repeat([]byte{7}, 32)
	bk := bytes.Repeat([]byte{0x0b}, 32)
	w, _ := crypto.NewWrapper(kek)
	kr, _ := crypto.KeyringFrom(map[uint32][]byte{1: kek})
	keys, err := crypto.NewBatchKey(bk)
	if err != nil {
		t.Fatal(err)
	}
	update := os.Getenv("UCL_UPDATE_GOLDEN") != ""
	for _, g := range goldenBodies {
		switch g.name {
		case "store_minimal", "store_full", "tombstone", "rekey", "edit", "share_grant_v3":
		default:
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			h := goldenHeader(g.body.Type())
			h.Version = version
			if err := w.Wrap(h.WrappedDEK[:], bk); err != nil {
				t.Fatal(err)
			}
			plain, err := EncodeBody(g.body, &h)
			if err != nil {
				t.Fatal(err)
			}
			var dek [crypto.KeySize]byte
			keys.EventKey(dek[:], h.ID[:])
			raw, err := sealRaw(&h, plain, dek[:])
			if err != nil {
				t.Fatal(err)
			}
			got := "body " + hex.EncodeToString(plain) + "\nraw " + hex.EncodeToString(raw) + "\n"
			if version >= FormatVersion {
				got += "hash " + HashRaw(raw).String() + "\n"
			}
			path := filepath.Join("testdata", "golden", prefix+g.name+".hex")
			if update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (regenerate with UCL_UPDATE_GOLDEN=1)", err)
			}
			if got != string(want) {
				t.Fatalf("encoding changed for %s:\n got %s\nwant %s", g.name, got, want)
			}
			ev, err := DecryptWith(kr, raw)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := EncodeBody(ev.Body, &ev.Header)
			if !bytes.Equal(again, plain) || ev.Header != h {
				t.Fatal("round trip changed the event")
			}
			// The data key handed out (shares, rotations) is the derived
			// DEK, not the batch key, and it opens the body alone.
			d, err := DEK(kr, raw)
			if err != nil || !bytes.Equal(d, dek[:]) {
				t.Fatalf("DEK: %x %v, want %x", d, err, dek)
			}
			if ev, err := DecryptWithDEK(raw, d); err != nil || ev.Header != h {
				t.Fatalf("decrypt with the DEK: %v", err)
			}
			// Read as format 1 (the header's key taken as the DEK) it
			// does not open, and the DEK under the other format's cipher
			// does not either: the version byte decides both.
			for _, a := range []crypto.AEAD{crypto.AESGCM, crypto.ChaCha20Poly1305} {
				var aad [aadSize]byte
				if _, err := crypto.OpenWith(a, nil, bk, sealAAD(raw, &aad), raw[HeaderSize:]); err == nil {
					t.Fatalf("the batch key itself opened the body under %s", a)
				}
				if _, err := crypto.OpenWith(a, nil, dek[:], sealAAD(raw, &aad), raw[HeaderSize:]); (err == nil) != (a == h.Cipher()) {
					t.Fatalf("the DEK under %s: %v (the header's cipher is %s)", a, err, h.Cipher())
				}
			}
		})
	}
}

// segmentOf frames raws as a segment file holds them: each entry's
// length, then the raw event and its CRC (final(i): raws[i] ends its
// batch).
func segmentOf(raws [][]byte, final func(i int) bool) []byte {
	var seg []byte
	for i, r := range raws {
		d := appendCRC(append([]byte{}, r...), final(i))
		seg = binary.AppendUvarint(seg, uint64(len(d)))
		seg = append(seg, d...)
	}
	return seg
}

func goldenRaws(f interface{ Fatal(...any) }) [][]byte {
	var out [][]byte
	ents, _ := os.ReadDir(filepath.Join("testdata", "golden"))
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".hex") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", "golden", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			parts := strings.Fields(ln)
			if len(parts) != 2 {
				continue
			}
			raw, _ := hex.DecodeString(parts[1])
			out = append(out, raw)
		}
	}
	return out
}

func FuzzDecodeEvent(f *testing.F) {
	for _, r := range goldenRaws(f) {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		h, err := DecodeHeader(raw)
		if err != nil {
			return
		}
		var enc [HeaderSize]byte
		h.Encode(enc[:])
		if !bytes.Equal(enc[:], raw[:HeaderSize]) {
			t.Fatalf("header does not round-trip")
		}
		// Bodies: every decoder must reject or round-trip canonically.
		for _, ty := range []Type{TypeStore, TypeTombstone, TypeShareGrant, TypeShareRevoke, TypeRekey, TypeEdit} {
			b, err := DecodeBody(ty, raw[HeaderSize:], &h)
			// verify's decoding (check: no default chunk id made, into a
			// reused store) accepts exactly what the full one accepts.
			var into Store
			if _, cerr := decodeBodyCheck(ty, raw[HeaderSize:], &h, true, &strCache{}, &into, true); (cerr == nil) != (err == nil) {
				t.Fatalf("%s body: checked decode says %v, full decode %v", ty, cerr, err)
			}
			if err != nil {
				continue
			}
			again, err := EncodeBody(b, &h)
			if err != nil {
				// A decoded body that does not re-encode must at least not panic;
				// validation rules are stricter than the decoder for tombstones.
				continue
			}
			if !bytes.Equal(again, raw[HeaderSize:]) {
				t.Fatalf("%s body not canonical: %x vs %x", ty, again, raw[HeaderSize:])
			}
		}
	})
}

func FuzzParseSegment(f *testing.F) {
	seg := segmentOf(goldenRaws(f), func(int) bool { return true })
	f.Add(seg)
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		ents, st := parseSegment(b)
		if st.goodEnd > int64(len(b)) {
			t.Fatal("goodEnd past end")
		}
		for _, e := range ents {
			if _, _, err := checkEntry(e.data); err != nil {
				t.Fatal("parseSegment returned an entry that does not check")
			}
		}
	})
}

// The on-disk framing of a two-entry batch (the first entry's CRC
// complemented, the second's plain) and the HEAD mark are frozen too.
func TestGoldenDiskFraming(t *testing.T) {
	update := os.Getenv("UCL_UPDATE_GOLDEN") != ""
	var raws [][]byte
	for _, name := range []string{"store_minimal", "tombstone"} {
		b, err := os.ReadFile(filepath.Join("testdata", "golden", name+".hex"))
		if err != nil {
			t.Fatal(err)
		}
		_, rawHex, _ := strings.Cut(strings.TrimSpace(string(b)), "\nraw ")
		raw, err := hex.DecodeString(rawHex)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	seg := segmentOf(raws, func(i int) bool { return i == 1 })
	mark := headMark{Seq: 42, Hash: Hash{0xde, 0xad, 0xbe, 0xef}, Durable: true}.encode()
	got := "segment " + hex.EncodeToString(seg) + "\nhead " + hex.EncodeToString(mark) + "\n"
	path := filepath.Join("testdata", "golden", "disk_framing.hex")
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("disk framing changed:\n got %s\nwant %s", got, want)
	}
	ents, st := parseSegment(seg)
	if len(ents) != 2 || ents[0].final || !ents[1].final || st.err != nil || st.torn {
		t.Fatalf("framing does not parse back: %+v %+v", ents, st)
	}
	m, err := decodeHeadMark(mark)
	if err != nil || m.Seq != 42 || !m.Durable {
		t.Fatalf("head mark does not decode: %+v %v", m, err)
	}
}

func FuzzDecodeHeadMark(f *testing.F) {
	f.Add(headMark{Seq: 7, Hash: Hash{1}, Durable: true}.encode())
	f.Add([]byte("UCLHEAD\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeHeadMark(b)
		if err != nil {
			return
		}
		if !bytes.Equal(m.encode(), b) {
			t.Fatal("head mark does not round-trip")
		}
	})
}
