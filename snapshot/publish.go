package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/unlimitedcontext/ucl/log"
)

// Publishing wire constants. Do not change: readers search for them.
const (
	publishMagic       = "UCLSNPB1"
	ContentType        = "application/x-ucl-snapshot"
	TagSnapshotID      = "UC-Snapshot-Id"
	TagPart            = "UC-Part"
	TagParts           = "UC-Parts"
	TagSnapshotSHA256  = "UC-Snapshot-Sha256"
	DefaultPartSize    = 256 << 10
	maxParts           = 1 << 16
	maxPublishManifest = maxManifest
)

// PushOptions configure Push.
type PushOptions struct {
	// PartSize caps the bytes per transaction (default DefaultPartSize).
	PartSize int
	// Progress reports parts posted.
	Progress func(done, total uint64)
}

// PushResult describes a published snapshot.
type PushResult struct {
	Name  string   `json:"name"`
	ID    string   `json:"id"`
	Seq   uint64   `json:"seq"`
	Bytes int      `json:"bytes"`
	TxIDs []string `json:"tx_ids"` // part order
	// Existed is true when the gateway already held every part (nothing
	// was uploaded).
	Existed bool `json:"existed"`
}

// EncodePublished returns the published form of a snapshot: magic,
// manifest length, manifest, archive.
func EncodePublished(manifest, archive []byte) []byte {
	b := make([]byte, 0, len(publishMagic)+4+len(manifest)+len(archive))
	b = append(b, publishMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(manifest)))
	b = append(b, manifest...)
	return append(b, archive...)
}

// DecodePublished splits a published blob into manifest and archive bytes
// (slices of b). It checks only the framing.
func DecodePublished(b []byte) (manifest, archive []byte, err error) {
	if len(b) < len(publishMagic)+4 || string(b[:len(publishMagic)]) != publishMagic {
		return nil, nil, fmt.Errorf("decode published snapshot: %w: bad header", ErrCorrupt)
	}
	n := binary.BigEndian.Uint32(b[len(publishMagic):])
	rest := b[len(publishMagic)+4:]
	if n == 0 || n > maxPublishManifest || uint64(n) > uint64(len(rest)) {
		return nil, nil, fmt.Errorf("decode published snapshot: %w: manifest length %d", ErrCorrupt, n)
	}
	return rest[:n], rest[n:], nil
}

// partUpload describes part (0-based) of parts of the published form of
// the snapshot m, whose bytes hash to sum.
func partUpload(m *Manifest, part, parts int, sum string) Upload {
	return Upload{
		ContentType: ContentType, SchemaVersion: strconv.Itoa(FormatVersion),
		LogID: m.LogIDBytes(), FirstSeq: 1, LastSeq: m.Seq, HeadHash: m.Head(),
		Tags: []Tag{
			{Name: TagSnapshotID, Value: m.ID},
			{Name: TagPart, Value: strconv.Itoa(part)},
			{Name: TagParts, Value: strconv.Itoa(parts)},
			{Name: TagSnapshotSHA256, Value: sum},
		},
	}
}

// Push uploads the snapshot in dir through g (which needs a wallet), one
// transaction per part. Every part is signed before the
// first is posted. When the gateway already holds a complete copy of this
// snapshot from the same wallet, nothing is uploaded.
func Push(ctx context.Context, g Gateway, dir string, o PushOptions) (*PushResult, error) {
	owner := g.Owner()
	if owner == "" {
		return nil, fmt.Errorf("push snapshot: %w", ErrNoWallet)
	}
	if o.PartSize <= 0 {
		o.PartSize = DefaultPartSize
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("push snapshot: %w", err)
	}
	if err := checkArchiveFile(filepath.Join(dir, ArchiveFile), m); err != nil {
		return nil, fmt.Errorf("push snapshot: %w", err)
	}
	mb, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("push snapshot: %w", err)
	}
	ab, err := os.ReadFile(filepath.Join(dir, ArchiveFile))
	if err != nil {
		return nil, fmt.Errorf("push snapshot: %w", err)
	}
	blob := EncodePublished(mb, ab)
	sum := sha256.Sum256(blob)
	hexSum := hex.EncodeToString(sum[:])
	res := &PushResult{Name: m.Name, ID: m.ID, Seq: m.Seq, Bytes: len(blob)}

	found, err := FindPublished(ctx, g, owner, m.LogIDBytes())
	if err != nil {
		return nil, fmt.Errorf("push snapshot: check gateway: %w", err)
	}
	for _, ps := range found {
		if ps.ID == m.ID && ps.SHA256 == hexSum {
			res.TxIDs, res.Existed = ps.TxIDs, true
			return res, nil
		}
	}
	parts := (len(blob) + o.PartSize - 1) / o.PartSize
	if parts > maxParts {
		return nil, fmt.Errorf("push snapshot: %d parts; raise the part size", parts)
	}
	signed := make([]Signed, parts)
	for i := range parts {
		lo, hi := i*o.PartSize, min((i+1)*o.PartSize, len(blob))
		if signed[i], err = g.Sign(ctx, blob[lo:hi], partUpload(m, i, parts, hexSum)); err != nil {
			return nil, fmt.Errorf("push snapshot: sign part %d/%d: %w", i+1, parts, err)
		}
		res.TxIDs = append(res.TxIDs, signed[i].TxID())
	}
	for i, tx := range signed {
		if err := g.Post(ctx, tx); err != nil {
			return res, fmt.Errorf("push snapshot: post part %d/%d: %w", i+1, parts, err)
		}
		if o.Progress != nil {
			o.Progress(uint64(i+1), uint64(parts))
		}
	}
	return res, nil
}

// PublishedSnapshot is a complete snapshot found on a gateway.
type PublishedSnapshot struct {
	ID       string   `json:"id"`
	LogID    [16]byte `json:"-"`
	Seq      uint64   `json:"seq"`
	HeadHash log.Hash `json:"-"`
	SHA256   string   `json:"sha256"` // of the published blob
	TxIDs    []string `json:"tx_ids"` // part order
	Size     int64    `json:"size"`
	Pending  bool     `json:"pending"` // some part is not mined yet
}

// FindPublished returns the complete snapshots of logID signed by owner
// (an address), newest (highest seq) first. Parts with malformed or
// inconsistent tags, or snapshots missing a part, are left out: a reader
// falls back to older snapshots or a full replay.
func FindPublished(ctx context.Context, g Gateway, owner string, logID [16]byte) ([]PublishedSnapshot, error) {
	txs, err := g.Find(ctx, owner, logID)
	if err != nil {
		return nil, fmt.Errorf("find published snapshots: %w", err)
	}
	type group struct {
		ps    PublishedSnapshot
		parts int
		byIdx map[int]Found
		bad   bool
	}
	groups := map[string]*group{}
	for _, t := range txs {
		get := map[string]string{}
		for _, tg := range t.Tags {
			if _, dup := get[tg.Name]; !dup {
				get[tg.Name] = tg.Value
			}
		}
		id, sum := get[TagSnapshotID], get[TagSnapshotSHA256]
		part, err1 := strconv.Atoi(get[TagPart])
		parts, err2 := strconv.Atoi(get[TagParts])
		if !hexLen(id, 16) || !hexLen(sum, 32) || err1 != nil || err2 != nil || parts < 1 || parts > maxParts || part < 0 || part >= parts {
			continue
		}
		key := id + "/" + sum
		gr := groups[key]
		if gr == nil {
			gr = &group{ps: PublishedSnapshot{ID: id, LogID: logID, Seq: t.LastSeq, HeadHash: t.HeadHash, SHA256: sum}, parts: parts, byIdx: map[int]Found{}}
			groups[key] = gr
		}
		if gr.parts != parts || gr.ps.Seq != t.LastSeq || gr.ps.HeadHash != t.HeadHash {
			gr.bad = true
			continue
		}
		if prev, dup := gr.byIdx[part]; dup && (prev.Pending || !t.Pending) {
			continue // keep one copy per part, preferring a mined one
		}
		gr.byIdx[part] = t
	}
	var out []PublishedSnapshot
	for _, gr := range groups {
		if gr.bad || len(gr.byIdx) != gr.parts {
			continue
		}
		for i := range gr.parts {
			t := gr.byIdx[i]
			gr.ps.TxIDs = append(gr.ps.TxIDs, t.ID)
			gr.ps.Size += t.DataSize
			gr.ps.Pending = gr.ps.Pending || t.Pending
		}
		out = append(out, gr.ps)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seq != out[j].Seq {
			return out[i].Seq > out[j].Seq
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Published is a snapshot fetched from a gateway and checked: the blob's
// SHA-256 matches its tags, the manifest parses and agrees with the tags,
// and the archive matches the manifest's size and hash. Decryption is left
// to Verify or Restore (after Import).
type Published struct {
	Manifest     *Manifest
	ManifestJSON []byte
	Archive      []byte
}

// FetchPublished downloads and checks the parts of ps.
func FetchPublished(ctx context.Context, g Gateway, ps PublishedSnapshot) (*Published, error) {
	var buf bytes.Buffer
	for i, id := range ps.TxIDs {
		b, err := g.Fetch(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("fetch snapshot %s part %d/%d: %w", ps.ID, i+1, len(ps.TxIDs), err)
		}
		buf.Write(b)
	}
	blob := buf.Bytes()
	sum := sha256.Sum256(blob)
	if hex.EncodeToString(sum[:]) != ps.SHA256 {
		return nil, fmt.Errorf("fetch snapshot %s: %w: reassembled bytes do not match %s", ps.ID, ErrCorrupt, TagSnapshotSHA256)
	}
	mb, ab, err := DecodePublished(blob)
	if err != nil {
		return nil, fmt.Errorf("fetch snapshot %s: %w", ps.ID, err)
	}
	m, err := ParseManifest(mb)
	if err != nil {
		return nil, fmt.Errorf("fetch snapshot %s: %w", ps.ID, err)
	}
	if m.ID != ps.ID || m.Seq != ps.Seq || m.Head() != ps.HeadHash {
		return nil, fmt.Errorf("fetch snapshot %s: %w: manifest disagrees with the tags", ps.ID, ErrCorrupt)
	}
	if m.LogIDBytes() != ps.LogID {
		return nil, fmt.Errorf("fetch snapshot %s: %w: manifest names log %s", ps.ID, ErrForeign, m.LogID)
	}
	as := sha256.Sum256(ab)
	if int64(len(ab)) != m.Archive.Size || hex.EncodeToString(as[:]) != m.Archive.SHA256 {
		return nil, fmt.Errorf("fetch snapshot %s: %w: archive does not match its manifest", ps.ID, ErrCorrupt)
	}
	return &Published{Manifest: m, ManifestJSON: mb, Archive: ab}, nil
}

// FetchNewest tries the snapshots of FindPublished newest first and returns
// the first that fetches and checks, with the refusals of the newer ones.
// It returns ErrNoSnapshot (wrapped) when none does: rebuild then replays
// every segment. A rebuild uses the result as: Import it, rebuild the log
// from segments (all of them, or from Seq+1 with FromPrevHash = HeadHash
// when the log can start there), then Restore the imported name.
func FetchNewest(ctx context.Context, g Gateway, owner string, logID [16]byte) (*Published, []Refusal, error) {
	found, err := FindPublished(ctx, g, owner, logID)
	if err != nil {
		return nil, nil, err
	}
	var refused []Refusal
	for _, ps := range found {
		p, err := FetchPublished(ctx, g, ps)
		if err == nil {
			return p, refused, nil
		}
		if ctx.Err() != nil {
			return nil, refused, err
		}
		refused = append(refused, refusal(ps.ID, err))
	}
	return nil, refused, fmt.Errorf("fetch published snapshot: %w on the gateway for log %x", ErrNoSnapshot, logID)
}
