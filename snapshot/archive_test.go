package snapshot

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var testKey = bytes.Repeat([]byte{7}, 32)

// makeTree writes a small tree with nested dirs, an empty dir, an empty
// file and a file spanning many frames.
func makeTree(t testing.TB) string {
	dir := t.TempDir()
	files := map[string]string{
		"a/x.db":         strings.Repeat("bolt page ", 100),
		"a/b/c.json":     `{"v":1}`,
		"empty-file":     "",
		"z":              "last",
		"a.b/order-test": "dot sorts before slash",
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o700)
		if err := os.WriteFile(full, []byte(c), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "empty-dir"), 0o700)
	return dir
}

// treeListing renders a tree (paths, kinds, perms, contents) for comparison.
func treeListing(t testing.TB, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		info, _ := d.Info()
		b.WriteString(rel + " " + info.Mode().String())
		if !d.IsDir() {
			c, _ := os.ReadFile(p)
			b.WriteString(" " + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

func encryptTree(t testing.TB, dir string, frame int, aad []byte) []byte {
	var buf bytes.Buffer
	fw, err := newFrameWriter(&buf, testKey, aad, frame)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTree(fw, dir); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decryptTo(b []byte, aad []byte, dir string) error {
	fr, err := newFrameReader(bytes.NewReader(b), testKey, aad)
	if err != nil {
		return err
	}
	if dir == "" {
		return readTree(fr, func(e treeEntry, body io.Reader) error {
			if body != nil {
				_, err := io.Copy(io.Discard, body)
				return err
			}
			return nil
		})
	}
	return extractTree(fr, dir)
}

func TestArchiveRoundTrip(t *testing.T) {
	src := makeTree(t)
	aad := []byte("binding")
	for _, frame := range []int{1, 7, 64, 1 << 20} {
		enc := encryptTree(t, src, frame, aad)
		if again := encryptTree(t, src, frame, aad); !bytes.Equal(again, enc) {
			t.Fatalf("frame %d: two archives of one tree differ", frame)
		}
		dst := t.TempDir()
		if err := decryptTo(enc, aad, dst); err != nil {
			t.Fatalf("frame %d: %v", frame, err)
		}
		if got, want := treeListing(t, dst), treeListing(t, src); got != want {
			t.Fatalf("frame %d: extracted\n%s\nwant\n%s", frame, got, want)
		}
		if err := decryptTo(enc, []byte("another binding"), ""); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("frame %d: other AAD: %v", frame, err)
		}
	}
}

// frameOffsets returns where each frame of an archive starts.
func frameOffsets(b []byte) []int {
	var offs []int
	for o := len(archiveMagic) + 4; o+4 <= len(b); {
		offs = append(offs, o)
		o += 4 + int(binary.BigEndian.Uint32(b[o:]))
	}
	return offs
}

func TestArchiveTamperDetected(t *testing.T) {
	src := makeTree(t)
	aad := []byte("binding")
	enc := encryptTree(t, src, 64, aad)
	offs := frameOffsets(enc)
	if len(offs) < 5 {
		t.Fatalf("only %d frames", len(offs))
	}
	// Cut at every frame boundary (and inside frames): always refused.
	for _, cut := range append(offs, offs[2]+9, len(enc)-1) {
		if err := decryptTo(enc[:cut], aad, ""); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("archive cut at %d of %d: %v", cut, len(enc), err)
		}
	}
	// Appended bytes, a duplicated last frame, swapped frames, a flipped bit anywhere.
	last := enc[offs[len(offs)-1]:]
	swapped := append([]byte(nil), enc[:offs[1]]...)
	swapped = append(swapped, enc[offs[2]:offs[3]]...)
	swapped = append(swapped, enc[offs[1]:offs[2]]...)
	swapped = append(swapped, enc[offs[3]:]...)
	bad := map[string][]byte{
		"appended byte":    append(append([]byte(nil), enc...), 0),
		"last frame twice": append(append([]byte(nil), enc...), last...),
		"frames swapped":   swapped,
		"frame dropped":    append(append([]byte(nil), enc[:offs[1]]...), enc[offs[2]:]...),
	}
	for i := 0; i < len(enc); i += 13 {
		b := append([]byte(nil), enc...)
		b[i] ^= 1
		bad["flip at "+strconv.Itoa(i)] = b
	}
	for name, b := range bad {
		if err := decryptTo(b, aad, ""); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func hexString(b []byte) string { return hex.EncodeToString(b) }

func TestReadTreeRejectsBadPaths(t *testing.T) {
	entry := func(kind byte, p string, body string) []byte {
		b := []byte{kind}
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendUvarint(b, 0o600)
		if kind == kindFile {
			b = binary.AppendUvarint(b, uint64(len(body)))
			b = append(b, body...)
		}
		return b
	}
	tree := func(es ...[]byte) []byte {
		b := []byte(treeMagic)
		for _, e := range es {
			b = append(b, e...)
		}
		return append(b, kindEnd)
	}
	cases := map[string][]byte{
		"dot-dot":           tree(entry(kindFile, "../escape", "x")),
		"absolute":          tree(entry(kindFile, "/etc/passwd", "x")),
		"no parent dir":     tree(entry(kindFile, "a/b", "x")),
		"duplicate":         tree(entry(kindFile, "a", "x"), entry(kindFile, "a", "y")),
		"file as parent":    tree(entry(kindFile, "a", "x"), entry(kindFile, "a/b", "y")),
		"unclean":           tree(entry(kindDir, "a", ""), entry(kindFile, "a//b", "x")),
		"after end":         append(tree(entry(kindFile, "a", "x")), 'x'),
		"no end":            tree(entry(kindFile, "a", "x"))[:len(tree(entry(kindFile, "a", "x")))-1],
		"unknown kind":      tree(entry('?', "a", "")),
		"short body":        []byte(treeMagic + "f\x01a\x80\x03\x05ab"),
		"bad magic":         []byte("NOTMAGIC" + "e"),
		"mode out of range": []byte(treeMagic + "d\x01a\xff\xff\x03e"),
	}
	for name, b := range cases {
		dst := t.TempDir()
		err := extractTree(bytes.NewReader(b), dst)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
		if _, serr := os.Stat(filepath.Join(filepath.Dir(dst), "escape")); serr == nil {
			t.Fatalf("%s: wrote outside the target", name)
		}
	}
	if err := extractTree(bytes.NewReader(tree(entry(kindDir, "a", ""), entry(kindFile, "a/b", "x"))), t.TempDir()); err != nil {
		t.Fatalf("valid tree: %v", err)
	}
}

var update = flag.Bool("update", false, "rewrite golden files (or set UCL_UPDATE_GOLDEN=1)")

// goldenManifest is a fixed manifest: the format, frozen.
func goldenManifest() *Manifest {
	return &Manifest{
		Format:   FormatVersion,
		Name:     "s000000001234-20240101T000000.000000000Z",
		ID:       "00112233445566778899aabbccddeeff",
		LogID:    "0f0e0d0c0b0a09080706050403020100",
		Seq:      1234,
		HeadHash: strings.Repeat("ab", 32),
		Created:  "2024-01-01T00:00:00Z",
		Projections: []ProjectionState{
			{Name: "timelines", Version: 1, Digest: strings.Repeat("01", 32)},
			{Name: "fts", Version: 2, Digest: strings.Repeat("02", 32)},
			{Name: "summary", Version: 1, Digest: strings.Repeat("03", 32)},
			{Name: "vectors", Version: 1, Digest: strings.Repeat("04", 32)},
		},
		Embedder: &EmbedderState{Name: "static-v1/0505050505050505/256", ModelHash: strings.Repeat("05", 32)},
		Archive:  ArchiveInfo{File: ArchiveFile, Size: 123456, SHA256: strings.Repeat("cd", 32), FrameSize: DefaultFrameSize, Compression: CompressionDeflate, PlainSize: 120000},
		Key:      KeyInfo{Epoch: 1, Wrapped: strings.Repeat("ef", 40)},
	}
}

func TestManifestGolden(t *testing.T) {
	m := goldenManifest()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "manifest-v2.golden.json")
	if *update || os.Getenv("UCL_UPDATE_GOLDEN") == "1" {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with UCL_UPDATE_GOLDEN=1 only for a deliberate format change)", err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("manifest encoding changed:\n%s\nwant\n%s", b, want)
	}
	got, err := ParseManifest(want)
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := got.Marshal(); !bytes.Equal(b2, want) {
		t.Fatal("golden manifest does not round-trip")
	}
	// The binding is part of the format too: frames sealed by one build
	// must open in the next.
	bind, err := os.ReadFile(filepath.Join("testdata", "manifest-v2.binding.hex"))
	if *update || os.Getenv("UCL_UPDATE_GOLDEN") == "1" {
		bind = []byte(hexString(m.Binding()) + "\n")
		os.WriteFile(filepath.Join("testdata", "manifest-v2.binding.hex"), bind, 0o644)
		err = nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(bind)) != hexString(got.Binding()) {
		t.Fatalf("binding changed: %s, golden %s", hexString(got.Binding()), bind)
	}
}

// TestManifestV1StillReads: snapshots written before the embedder was
// recorded (format 1) parse, re-encode byte for byte and keep their
// binding, so their archives still open.
func TestManifestV1StillReads(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "manifest-v1.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != 1 || m.Embedder != nil {
		t.Fatalf("format %d embedder %v", m.Format, m.Embedder)
	}
	if b2, _ := m.Marshal(); !bytes.Equal(b2, b) {
		t.Fatalf("v1 manifest does not round-trip:\n%s", b2)
	}
	bind, err := os.ReadFile(filepath.Join("testdata", "manifest-v1.binding.hex"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(bind)) != hexString(m.Binding()) {
		t.Fatalf("v1 binding changed: %s, golden %s", hexString(m.Binding()), bind)
	}
	// A v1 manifest cannot carry an embedder (the field did not exist).
	m.Embedder = &EmbedderState{Name: "hash-v1/384"}
	b3, _ := m.Marshal()
	if _, err := ParseManifest(b3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("embedder in a v1 manifest: %v", err)
	}
}

func TestParseManifestRejects(t *testing.T) {
	good, _ := goldenManifest().Marshal()
	cases := map[string]func(m *Manifest){
		"seq 0":          func(m *Manifest) { m.Seq = 0 },
		"bad log id":     func(m *Manifest) { m.LogID = "xyz" },
		"upper-case hex": func(m *Manifest) { m.HeadHash = strings.ToUpper(m.HeadHash) },
		"dup projection": func(m *Manifest) { m.Projections[1].Name = "timelines" },
		"no projections": func(m *Manifest) { m.Projections = nil },
		"bad name":       func(m *Manifest) { m.Name = "../x" },
		"frame too big":  func(m *Manifest) { m.Archive.FrameSize = MaxFrameSize + 1 },
		"epoch 0":        func(m *Manifest) { m.Key.Epoch = 0 },
		"short wrap":     func(m *Manifest) { m.Key.Wrapped = "abcd" },
		"bad time":       func(m *Manifest) { m.Created = "yesterday" },
		"embedder name":  func(m *Manifest) { m.Embedder.Name = "" },
		"embedder model": func(m *Manifest) { m.Embedder.ModelHash = "abcd" },
	}
	for name, edit := range cases {
		m, _ := ParseManifest(good)
		edit(m)
		b, _ := m.Marshal()
		if _, err := ParseManifest(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	extra := bytes.Replace(good, []byte(`"format": 2,`), []byte(`"format": 2, "surprise": true,`), 1)
	if _, err := ParseManifest(extra); !errors.Is(err, ErrCorrupt) {
		t.Errorf("unknown field: %v", err)
	}
}

func FuzzParseManifest(f *testing.F) {
	good, _ := goldenManifest().Marshal()
	f.Add(good)
	if v1, err := os.ReadFile(filepath.Join("testdata", "manifest-v1.golden.json")); err == nil {
		f.Add(v1)
	}
	f.Add([]byte(`{"format":1}`))
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`{"format":3}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrIncompatible) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		// What parses re-encodes to something that parses the same.
		b2, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseManifest(b2)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if hexString(m.Binding()) != hexString(m2.Binding()) {
			t.Fatal("binding changed on re-encode")
		}
	})
}

// FuzzFrameReader feeds arbitrary archive bytes (framing, lengths, frame
// bodies) to the frame decoder and the tree decoder behind it: errors must
// be ErrCorrupt, never a panic or an over-allocation.
func FuzzFrameReader(f *testing.F) {
	src := makeTree(f)
	aad := []byte("binding")
	enc := encryptTree(f, src, 64, aad)
	f.Add(enc)
	f.Add(enc[:len(enc)/2])
	f.Add([]byte(archiveMagic + "\x00\x00\x00\x40\x00\x00\x00\x10"))
	f.Add([]byte(archiveMagic + "\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := decryptTo(b, aad, "")
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("untyped error: %v", err)
		}
		if err == nil && !bytes.Equal(b, enc) {
			t.Fatal("accepted bytes that differ from the only authentic archive")
		}
	})
}

// FuzzReadTree fuzzes the plaintext tree decoder directly (the fuzzer
// cannot forge GCM tags, so the frame fuzzer rarely reaches it), extracting
// into a temp dir and checking nothing escapes it.
func FuzzReadTree(f *testing.F) {
	src := makeTree(f)
	var buf bytes.Buffer
	if err := writeTree(&buf, src); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(treeMagic + "e"))
	f.Add([]byte(treeMagic + "f\x09../escape\x80\x03\x01xe"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "x")
		os.Mkdir(dst, 0o700)
		err := extractTree(bytes.NewReader(b), dst)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("untyped error: %v", err)
		}
		ents, _ := os.ReadDir(parent)
		if len(ents) != 1 {
			t.Fatalf("extraction wrote outside its directory: %v", ents)
		}
	})
}
