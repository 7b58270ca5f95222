package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
)

// Wire constants. Do not change.
const (
	// FormatVersion is the manifest's "format" value this build writes.
	// It reads MinFormatVersion..FormatVersion: format 2 added the
	// embedder; a format 1 manifest records none.
	FormatVersion    = 2
	MinFormatVersion = 1
	// ManifestFile and ArchiveFile are the names inside a snapshot directory.
	ManifestFile = "manifest.json"
	ArchiveFile  = "archive.bin"
	// DefaultFrameSize is the plaintext bytes per encrypted frame.
	DefaultFrameSize = 1 << 20
	// MaxFrameSize bounds the frame size a reader accepts.
	MaxFrameSize = 16 << 20

	bindingDomain = "ucl-snapshot-v1"
	maxManifest   = 1 << 20
)

var (
	// ErrNoSnapshot is returned when there is no snapshot, or none of the
	// given name.
	ErrNoSnapshot = errors.New("snapshot: no such snapshot")
	// ErrCorrupt is returned when a manifest does not parse, the archive's
	// size or SHA-256 differs from the manifest, a frame fails
	// authentication, the archive is truncated or malformed, or the
	// restored state's digests differ from the manifest's.
	ErrCorrupt = errors.New("snapshot: corrupt")
	// ErrForeign is returned when a snapshot belongs to another log (its
	// log id differs).
	ErrForeign = errors.New("snapshot: belongs to another log")
	// ErrAhead is returned when a snapshot's seq is beyond the log's head
	// (the log is older than the snapshot, or was cut).
	ErrAhead = errors.New("snapshot: ahead of the log")
	// ErrDiverged is returned when the log's event at the snapshot's seq
	// has another hash: the snapshot was taken on another chain.
	ErrDiverged = errors.New("snapshot: not on this log's chain")
	// ErrKey is returned when the snapshot key cannot be unwrapped: the
	// vault-key epoch was shredded, or the key is another store's.
	ErrKey = errors.New("snapshot: cannot unwrap the snapshot key")
	// ErrIncompatible is returned when a snapshot's format version, or its
	// projection set and versions, differ from this build's.
	ErrIncompatible = errors.New("snapshot: incompatible with this build")
	// ErrEmbedder is returned when a snapshot's vectors were made by
	// another embedder (name or model hash) than the one the store is
	// configured with: its vectors would not match the store's queries.
	ErrEmbedder = errors.New("snapshot: made with another embedder")
)

// ProjectionState is one projection in a manifest.
type ProjectionState struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
	Digest  string `json:"digest"` // hex SHA-256 of the logical content
}

// ArchiveInfo describes archive.bin.
type ArchiveInfo struct {
	File      string `json:"file"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	FrameSize int    `json:"frame_size"`
	// Compression of the plaintext tree inside the frames: "deflate"
	// (RFC 1951) is the only value format 1 defines.
	Compression string `json:"compression"`
	// PlainSize is the size of the uncompressed tree.
	PlainSize int64 `json:"plain_size"`
}

// CompressionDeflate is the archive compression this build writes and reads.
const CompressionDeflate = "deflate"

// KeyInfo is the wrapped snapshot key.
type KeyInfo struct {
	Epoch   uint32 `json:"epoch"`
	Wrapped string `json:"wrapped"` // hex of crypto.WrappedKeySize bytes
}

// EmbedderState identifies the embedder that made a snapshot's vectors.
type EmbedderState struct {
	Name string `json:"name"`
	// ModelHash is the hex SHA-256 of the model files; absent for an
	// embedder without them (the built-in hash embedder, a server).
	ModelHash string `json:"model_hash,omitempty"`
}

func (e *EmbedderState) String() string {
	if e.ModelHash == "" {
		return fmt.Sprintf("%q", e.Name)
	}
	return fmt.Sprintf("%q (model %.16s)", e.Name, e.ModelHash)
}

// Manifest describes one snapshot (see the package doc for the format).
type Manifest struct {
	Format      int               `json:"format"`
	Name        string            `json:"name"`
	ID          string            `json:"id"`
	LogID       string            `json:"log_id"`
	Seq         uint64            `json:"seq"`
	HeadHash    string            `json:"head_hash"`
	Created     string            `json:"created"`
	Projections []ProjectionState `json:"projections"`
	// Embedder is set from format 2 on when the set has a vectors
	// projection.
	Embedder *EmbedderState `json:"embedder,omitempty"`
	Archive  ArchiveInfo    `json:"archive"`
	Key      KeyInfo        `json:"key"`
}

// Marshal returns the manifest as indented JSON with a final newline.
func (m *Manifest) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// ParseManifest decodes and validates a manifest. Unknown fields are
// refused, so a manifest from a newer format is not half-read.
func ParseManifest(b []byte) (*Manifest, error) {
	if len(b) > maxManifest {
		return nil, fmt.Errorf("parse manifest: %w: %d bytes", ErrCorrupt, len(b))
	}
	var probe struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("parse manifest: %w: %v", ErrCorrupt, err)
	}
	if probe.Format < MinFormatVersion || probe.Format > FormatVersion {
		return nil, fmt.Errorf("parse manifest: %w: format version %d (this build reads %d to %d)", ErrIncompatible, probe.Format, MinFormatVersion, FormatVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("parse manifest: %w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parse manifest: %w: data after the manifest", ErrCorrupt)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("parse manifest: %w: %v", ErrCorrupt, err)
	}
	if m.Archive.Compression != CompressionDeflate {
		return nil, fmt.Errorf("parse manifest: %w: compression %q", ErrIncompatible, m.Archive.Compression)
	}
	return &m, nil
}

func hexLen(s string, n int) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == n && strings.ToLower(s) == s
}

func (m *Manifest) validate() error {
	switch {
	case !validName(m.Name):
		return fmt.Errorf("name %q", m.Name)
	case !hexLen(m.ID, 16):
		return fmt.Errorf("id %q", m.ID)
	case !hexLen(m.LogID, 16):
		return fmt.Errorf("log_id %q", m.LogID)
	case m.Seq == 0:
		return errors.New("seq 0")
	case !hexLen(m.HeadHash, 32):
		return fmt.Errorf("head_hash %q", m.HeadHash)
	case len(m.Projections) == 0:
		return errors.New("no projections")
	case m.Archive.File != ArchiveFile:
		return fmt.Errorf("archive file %q", m.Archive.File)
	case m.Archive.Size < int64(len(archiveMagic))+4:
		return fmt.Errorf("archive size %d", m.Archive.Size)
	case !hexLen(m.Archive.SHA256, 32):
		return fmt.Errorf("archive sha256 %q", m.Archive.SHA256)
	case m.Archive.FrameSize <= 0 || m.Archive.FrameSize > MaxFrameSize:
		return fmt.Errorf("frame size %d", m.Archive.FrameSize)
	case m.Archive.PlainSize < 0:
		return fmt.Errorf("plain size %d", m.Archive.PlainSize)
	case m.Key.Epoch == 0:
		return errors.New("key epoch 0")
	case !hexLen(m.Key.Wrapped, crypto.WrappedKeySize):
		return fmt.Errorf("wrapped key %q", m.Key.Wrapped)
	}
	if _, err := time.Parse(time.RFC3339Nano, m.Created); err != nil {
		return fmt.Errorf("created %q", m.Created)
	}
	switch {
	case m.Format < 2 && m.Embedder != nil:
		return errors.New("embedder in a format 1 manifest")
	case m.Embedder != nil && (m.Embedder.Name == "" || len(m.Embedder.Name) > 200 || strings.ContainsRune(m.Embedder.Name, 0)):
		return fmt.Errorf("embedder name %q", m.Embedder.Name)
	case m.Embedder != nil && m.Embedder.ModelHash != "" && !hexLen(m.Embedder.ModelHash, 32):
		return fmt.Errorf("embedder model hash %q", m.Embedder.ModelHash)
	}
	seen := map[string]bool{}
	for _, p := range m.Projections {
		if p.Name == "" || strings.ContainsRune(p.Name, 0) || seen[p.Name] {
			return fmt.Errorf("projection name %q", p.Name)
		}
		seen[p.Name] = true
		if p.Version < 0 || !hexLen(p.Digest, 32) {
			return fmt.Errorf("projection %s: version %d digest %q", p.Name, p.Version, p.Digest)
		}
	}
	return nil
}

// validName accepts the names Create makes and Import keeps: letters,
// digits, '-', '.', '_', not starting with '.'.
func validName(s string) bool {
	if s == "" || len(s) > 100 || s[0] == '.' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// LogIDBytes returns the log id as 16 bytes (valid after ParseManifest).
func (m *Manifest) LogIDBytes() [16]byte {
	var id [16]byte
	b, _ := hex.DecodeString(m.LogID)
	copy(id[:], b)
	return id
}

// Head returns the head hash as a log.Hash (valid after ParseManifest).
func (m *Manifest) Head() log.Hash {
	var h log.Hash
	b, _ := hex.DecodeString(m.HeadHash)
	copy(h[:], b)
	return h
}

// Digests returns name → hex digest.
func (m *Manifest) Digests() map[string]string {
	out := make(map[string]string, len(m.Projections))
	for _, p := range m.Projections {
		out[p.Name] = p.Digest
	}
	return out
}

// Binding is the value every archive frame authenticates as AAD: a hash of
// the manifest's identity fields (package doc).
func (m *Manifest) Binding() []byte {
	h := sha256.New()
	h.Write([]byte(bindingDomain))
	h.Write([]byte{0})
	id, _ := hex.DecodeString(m.ID)
	h.Write(id)
	lid, _ := hex.DecodeString(m.LogID)
	h.Write(lid)
	h.Write(binary.BigEndian.AppendUint64(nil, m.Seq))
	hh, _ := hex.DecodeString(m.HeadHash)
	h.Write(hh)
	for _, p := range m.Projections {
		h.Write([]byte(p.Name))
		h.Write([]byte{0})
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(p.Version)))
		d, _ := hex.DecodeString(p.Digest)
		h.Write(d)
	}
	if m.Format >= 2 && m.Embedder != nil {
		h.Write([]byte("embedder"))
		h.Write([]byte{0})
		h.Write([]byte(m.Embedder.Name))
		h.Write([]byte{0})
		mh, _ := hex.DecodeString(m.Embedder.ModelHash)
		h.Write(mh)
	}
	return h.Sum(nil)
}

// unwrapKey returns the snapshot key using kr.
func (m *Manifest) unwrapKey(kr *crypto.Keyring) ([]byte, error) {
	if kr == nil {
		return nil, fmt.Errorf("unwrap snapshot key: %w: no vault key", ErrKey)
	}
	w, err := kr.Wrapper(m.Key.Epoch)
	if err != nil {
		return nil, fmt.Errorf("unwrap snapshot key: %w: %v", ErrKey, err)
	}
	wrapped, _ := hex.DecodeString(m.Key.Wrapped)
	k := make([]byte, crypto.KeySize)
	if err := w.Unwrap(k, wrapped); err != nil {
		return nil, fmt.Errorf("unwrap snapshot key (epoch %d): %w: %v", m.Key.Epoch, ErrKey, err)
	}
	return k, nil
}
