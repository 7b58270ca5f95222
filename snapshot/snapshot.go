package snapshot

import (
	"bufio"
	"compress/flate"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projstd"
)

// DefaultKeep is how many snapshots Create keeps by default.
const DefaultKeep = 3

// Env is what snapshots work on: a log, its identity and keys, the
// projections directory and the snapshots directory.
type Env struct {
	// Log is the event source (a *log.Log in practice).
	Log projections.Source
	// LogID is the log's UC-Log-Id.
	LogID [16]byte
	// Keys holds the vault-key epochs; nil allows list and the keyless
	// checks of verify only.
	Keys *crypto.Keyring
	// ProjDir is the projection set's directory (DIR/projections).
	ProjDir string
	// SnapDir is the snapshots directory (DIR/snapshots).
	SnapDir string
	// Set configures the projection set (embedder, ...): it must be the
	// same the store uses, or digests will differ.
	Set projstd.Options
}

// Progress reports a long step: stage names what runs ("project",
// "archive", "verify", "extract", "replay", "rebuild"); total 0 is unknown.
type Progress func(stage string, done, total uint64)

func (p Progress) stage(name string) func(done, total uint64) {
	if p == nil {
		return nil
	}
	return func(done, total uint64) { p(name, done, total) }
}

// Flusher is implemented by projections that keep state they rebuild on
// open from a journal (the vector graph) and can write it down now. Create
// flushes before archiving, so opening a restored snapshot is cheap.
type Flusher interface {
	Flush() error
}

// CreateOptions configure Create.
type CreateOptions struct {
	// Keep is how many snapshots remain after a successful Create, the new
	// one included (0: DefaultKeep; negative: keep all).
	Keep int
	// FrameSize is the plaintext bytes per encrypted frame (default
	// DefaultFrameSize).
	FrameSize int
	// Now stamps the snapshot (default time.Now); tests pin it.
	Now func() time.Time
	// Progress, if set, reports the catch-up and the archiving.
	Progress Progress
}

// CreateResult is a new snapshot and what retention removed.
type CreateResult struct {
	Manifest *Manifest `json:"manifest"`
	Dir      string    `json:"dir"`
	Removed  []string  `json:"removed,omitempty"`
}

// pinned fixes a source's head so the snapshot is taken at one position.
type pinned struct {
	projections.Source
	head uint64
	hash log.Hash
}

func (b pinned) Head() (uint64, log.Hash) { return b.head, b.hash }

// EventAt reads one event of the pinned range (the timelines read chunk
// content back through it).
func (b pinned) EventAt(seq uint64) (*log.Event, error) {
	r, ok := b.Source.(projections.EventReader)
	if !ok {
		return nil, fmt.Errorf("read event %d: the source reads no single events", seq)
	}
	if seq > b.head {
		return nil, fmt.Errorf("read event %d: %w (pinned at %d)", seq, log.ErrNotFound, b.head)
	}
	return r.EventAt(seq)
}

func (b pinned) HashAt(seq uint64) (log.Hash, error) {
	if seq > b.head {
		return log.Hash{}, fmt.Errorf("hash at %d: %w", seq, log.ErrNotFound)
	}
	return b.Source.HashAt(seq)
}

func (b pinned) Events(ctx context.Context, from, to uint64, fn func(*log.Event) error) error {
	if to == 0 || to > b.head {
		to = b.head
	}
	if from > to {
		return nil
	}
	return b.Source.Events(ctx, from, to, fn)
}

// Create catches the projections up to the log's head N, closes them and
// writes a snapshot of DIR/projections at N, then applies retention. The
// projections must not be open elsewhere in the process.
func Create(ctx context.Context, env Env, o CreateOptions) (*CreateResult, error) {
	if env.Keys == nil {
		return nil, fmt.Errorf("create snapshot: %w", log.ErrNoKeys)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FrameSize == 0 {
		o.FrameSize = DefaultFrameSize
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	head, headHash := env.Log.Head()
	if head == 0 {
		return nil, errors.New("create snapshot: the log is empty; append events first")
	}
	src := pinned{env.Log, head, headHash}
	set, err := projstd.Open(env.ProjDir, src, env.Set)
	if err != nil {
		return nil, fmt.Errorf("create snapshot: open projections: %w", err)
	}
	if err := set.CatchUp(ctx, o.Progress.stage("project")); err != nil {
		set.Close()
		return nil, fmt.Errorf("create snapshot: catch up projections: %w", err)
	}
	st, err := set.Projector.Status()
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	var emb *EmbedderState
	if set.Vectors != nil {
		emb = &EmbedderState{Name: set.Vectors.EmbedderName(), ModelHash: set.Vectors.EmbedderModelHash()}
	}
	for _, p := range set.Projector.Projections() {
		if f, ok := p.(Flusher); ok {
			if err := f.Flush(); err != nil {
				set.Close()
				return nil, fmt.Errorf("create snapshot: flush %s: %w", p.Name(), err)
			}
		}
	}
	// Closing makes bbolt and bleve quiescent: their files are what a
	// reopen would read.
	if err := set.Close(); err != nil {
		return nil, fmt.Errorf("create snapshot: close projections: %w", err)
	}
	now := o.Now().UTC()
	m := &Manifest{
		Format:   FormatVersion,
		Name:     fmt.Sprintf("s%012d-%s", head, now.Format("20060102T150405.000000000Z")),
		LogID:    hex.EncodeToString(env.LogID[:]),
		Seq:      head,
		HeadHash: hex.EncodeToString(headHash[:]),
		Created:  now.Format(time.RFC3339Nano),
		Embedder: emb,
		Archive:  ArchiveInfo{File: ArchiveFile, FrameSize: o.FrameSize, Compression: CompressionDeflate},
		Key:      KeyInfo{Epoch: env.Keys.Current()},
	}
	for _, s := range st {
		if s.Checkpoint.Seq != head || s.Checkpoint.Hash != headHash {
			return nil, fmt.Errorf("create snapshot: projection %s is at %d, not %d", s.Name, s.Checkpoint.Seq, head)
		}
		m.Projections = append(m.Projections, ProjectionState{Name: s.Name, Version: s.Version, Digest: s.Digest})
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	m.ID = hex.EncodeToString(id[:])
	key, err := crypto.NewKey()
	if err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	w, err := env.Keys.Wrapper(m.Key.Epoch)
	if err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	wrapped := make([]byte, crypto.WrappedKeySize)
	if err := w.Wrap(wrapped, key); err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	m.Key.Wrapped = hex.EncodeToString(wrapped)

	if err := fsutil.MkdirAllSync(env.SnapDir, 0o700); err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	removeTemps(env.SnapDir)
	final := filepath.Join(env.SnapDir, m.Name)
	if _, err := os.Stat(final); err == nil {
		return nil, fmt.Errorf("create snapshot: %s already exists", m.Name)
	}
	tmp := filepath.Join(env.SnapDir, ".tmp-"+m.Name)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := writeArchive(ctx, filepath.Join(tmp, ArchiveFile), env.ProjDir, key, m, o.Progress.stage("archive")); err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	mb, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(tmp, ManifestFile), mb, 0o600); err != nil {
		return nil, fmt.Errorf("create snapshot: write manifest: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	ok = true
	if err := fsutil.SyncDir(env.SnapDir); err != nil {
		return nil, fmt.Errorf("create snapshot: %w", err)
	}
	res := &CreateResult{Manifest: m, Dir: final}
	if o.Keep > 0 {
		if res.Removed, err = Prune(env.SnapDir, o.Keep); err != nil {
			return res, fmt.Errorf("create snapshot: retention: %w", err)
		}
	}
	return res, nil
}

// countingWriter counts and hashes what passes through.
type countingWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// writeArchive streams the tree of projDir through the frame encryption
// into path (fsynced) and fills m.Archive's size, hash and plain size.
func writeArchive(ctx context.Context, path, projDir string, key []byte, m *Manifest, progress func(done, total uint64)) error {
	total := uint64(fsutil.DiskUsage(projDir))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	defer f.Close()
	cw := &countingWriter{w: f, h: sha256.New()}
	fw, err := newFrameWriter(cw, key, m.Binding(), m.Archive.FrameSize)
	if err != nil {
		return err
	}
	zw, err := flate.NewWriter(fw, flate.BestSpeed)
	if err != nil {
		return err
	}
	pw := &progressWriter{w: zw, fn: progress, total: total, ctx: ctx}
	if err := writeTree(pw, projDir); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compress archive: %w", err)
	}
	if err := fw.Close(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync archive: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close archive: %w", err)
	}
	m.Archive.Size = cw.n
	m.Archive.SHA256 = hex.EncodeToString(cw.h.Sum(nil))
	m.Archive.PlainSize = int64(pw.done)
	if progress != nil {
		progress(total, total)
	}
	return nil
}

type progressWriter struct {
	w      io.Writer
	fn     func(done, total uint64)
	total  uint64
	done   uint64
	report uint64
	ctx    context.Context
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += uint64(n)
	if p.done-p.report >= 4<<20 {
		p.report = p.done
		if err := p.ctx.Err(); err != nil {
			return n, err
		}
		if p.fn != nil {
			p.fn(min(p.done, p.total), p.total)
		}
	}
	return n, err
}

// removeTemps deletes leftovers of interrupted Creates and Imports.
func removeTemps(snapDir string) {
	ents, _ := os.ReadDir(snapDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			os.RemoveAll(filepath.Join(snapDir, e.Name()))
		}
	}
}

// Info is a snapshot found in a directory. Err is set when its manifest
// cannot be read (the snapshot is listed, and refused by Restore).
type Info struct {
	Name     string    `json:"name"`
	Dir      string    `json:"dir"`
	Manifest *Manifest `json:"manifest,omitempty"`
	Err      error     `json:"-"`
}

// List returns the snapshots in snapDir, newest (highest name) first. A
// missing directory is an empty list.
func List(snapDir string) ([]Info, error) {
	ents, err := os.ReadDir(snapDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var out []Info
	for _, e := range ents {
		if !e.IsDir() || !validName(e.Name()) {
			continue
		}
		in := Info{Name: e.Name(), Dir: filepath.Join(snapDir, e.Name())}
		in.Manifest, in.Err = ReadManifest(in.Dir)
		if in.Err == nil && in.Manifest.Name != in.Name {
			in.Err = fmt.Errorf("read manifest of %s: %w: it names itself %q", in.Name, ErrCorrupt, in.Manifest.Name)
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name > out[j].Name })
	return out, nil
}

// ReadManifest reads and parses dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read manifest of %s: %w: no %s", filepath.Base(dir), ErrCorrupt, ManifestFile)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	m, err := ParseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(dir), err)
	}
	return m, nil
}

// Find returns the snapshot called name, or the newest when name is "".
func Find(snapDir, name string) (Info, error) {
	l, err := List(snapDir)
	if err != nil {
		return Info{}, err
	}
	for _, in := range l {
		if name == "" || in.Name == name {
			return in, nil
		}
	}
	if name == "" {
		return Info{}, fmt.Errorf("find snapshot: %w in %s", ErrNoSnapshot, snapDir)
	}
	return Info{}, fmt.Errorf("find snapshot %q: %w", name, ErrNoSnapshot)
}

// Prune removes all but the newest keep snapshots and returns the names
// removed (oldest first).
func Prune(snapDir string, keep int) ([]string, error) {
	l, err := List(snapDir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for i := len(l) - 1; i >= keep && i >= 0; i-- {
		// Rename first, so a crash never leaves a half-deleted snapshot
		// under a valid name.
		gone := filepath.Join(snapDir, ".tmp-rm-"+l[i].Name)
		if err := os.Rename(l[i].Dir, gone); err != nil {
			return removed, fmt.Errorf("remove snapshot %s: %w", l[i].Name, err)
		}
		if err := os.RemoveAll(gone); err != nil {
			return removed, fmt.Errorf("remove snapshot %s: %w", l[i].Name, err)
		}
		removed = append(removed, l[i].Name)
	}
	if len(removed) > 0 {
		return removed, fsutil.SyncDir(snapDir)
	}
	return removed, nil
}

// Check is one verification step and its outcome.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Skipped is set when the step could not run (no keys, no log).
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Keys, if set, decrypt every frame and decode the archive.
	Keys *crypto.Keyring
	// Log and LogID, if Log is set, check the manifest against the log.
	Log   projections.Source
	LogID [16]byte
	// Progress reports the decryption.
	Progress func(done, total uint64)
}

// Verify checks a snapshot directory: manifest, archive size and SHA-256,
// and optionally decryption and the log. It returns every check run and
// the first failure (nil when all ran checks passed).
func Verify(ctx context.Context, dir string, o VerifyOptions) (*Manifest, []Check, error) {
	var checks []Check
	var m *Manifest
	fail := func(name string, err error) (*Manifest, []Check, error) {
		checks = append(checks, Check{Name: name, Detail: err.Error()})
		return m, checks, err
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return fail("manifest", err)
	}
	if m.Name != filepath.Base(dir) {
		return fail("manifest", fmt.Errorf("verify %s: %w: manifest names %q", filepath.Base(dir), ErrCorrupt, m.Name))
	}
	detail := fmt.Sprintf("seq %d, %d projections", m.Seq, len(m.Projections))
	if m.Embedder != nil {
		detail += ", embedder " + m.Embedder.String()
	}
	checks = append(checks, Check{Name: "manifest", OK: true, Detail: detail})
	if o.Log != nil {
		if err := CheckLog(m, o.Log, o.LogID); err != nil {
			return fail("log", err)
		}
		checks = append(checks, Check{Name: "log", OK: true, Detail: fmt.Sprintf("event %d has the snapshot's head hash", m.Seq)})
	} else {
		checks = append(checks, Check{Name: "log", Skipped: true, Detail: "no log given"})
	}
	if err := checkArchiveFile(filepath.Join(dir, ArchiveFile), m); err != nil {
		return fail("archive", err)
	}
	checks = append(checks, Check{Name: "archive", OK: true, Detail: fmt.Sprintf("%d bytes, sha256 matches", m.Archive.Size)})
	if o.Keys == nil {
		checks = append(checks, Check{Name: "decrypt", Skipped: true, Detail: "no vault key"})
		return m, checks, nil
	}
	if err := decryptArchive(ctx, filepath.Join(dir, ArchiveFile), m, o.Keys, o.Progress, nil); err != nil {
		return fail("decrypt", err)
	}
	checks = append(checks, Check{Name: "decrypt", OK: true, Detail: fmt.Sprintf("%d plaintext bytes, every frame authentic", m.Archive.PlainSize)})
	return m, checks, nil
}

// CheckLog checks that m is a snapshot of src: same log id, seq at most
// the head, and the same hash at seq.
func CheckLog(m *Manifest, src projections.Source, logID [16]byte) error {
	if m.LogIDBytes() != logID {
		return fmt.Errorf("check snapshot %s: %w: log id %s, this log is %s", m.Name, ErrForeign, m.LogID, hex.EncodeToString(logID[:]))
	}
	head, _ := src.Head()
	if m.Seq > head {
		return fmt.Errorf("check snapshot %s: %w: snapshot at seq %d, log head %d", m.Name, ErrAhead, m.Seq, head)
	}
	h, err := src.HashAt(m.Seq)
	if err != nil {
		return fmt.Errorf("check snapshot %s: read hash at %d: %w", m.Name, m.Seq, err)
	}
	if h != m.Head() {
		return fmt.Errorf("check snapshot %s: %w: event %d is %s in the log, %.12s in the snapshot", m.Name, ErrDiverged, m.Seq, h.String()[:12], m.HeadHash)
	}
	return nil
}

func checkArchiveFile(path string, m *Manifest) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("check archive of %s: %w: %s missing", m.Name, ErrCorrupt, ArchiveFile)
		}
		return fmt.Errorf("check archive: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("check archive: %w", err)
	}
	if n != m.Archive.Size {
		return fmt.Errorf("check archive of %s: %w: %d bytes, manifest says %d", m.Name, ErrCorrupt, n, m.Archive.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != m.Archive.SHA256 {
		return fmt.Errorf("check archive of %s: %w: sha256 %.12s, manifest says %.12s", m.Name, ErrCorrupt, got, m.Archive.SHA256)
	}
	return nil
}

// decryptArchive decrypts and decodes the archive at path, extracting it
// into dir when dir is not "" (else only checking it).
func decryptArchive(ctx context.Context, path string, m *Manifest, kr *crypto.Keyring, progress func(done, total uint64), dir func() string) error {
	key, err := m.unwrapKey(kr)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open archive: %w", err)
	}
	defer f.Close()
	return decryptFrom(ctx, f, m, key, progress, dir)
}

func decryptFrom(ctx context.Context, r io.Reader, m *Manifest, key []byte, progress func(done, total uint64), dir func() string) error {
	in := &progressReader{r: r, fn: progress, total: uint64(m.Archive.Size), ctx: ctx}
	fr, err := newFrameReader(in, key, m.Binding())
	if err != nil {
		return err
	}
	// The decompressor reads a ByteReader exactly up to the end of the
	// deflate stream, so trailing bytes are seen below.
	zbr := bufio.NewReaderSize(fr, 64<<10)
	zr := flate.NewReader(zbr)
	defer zr.Close()
	tr := &corruptReader{r: zr}
	if dir != nil {
		err = extractTree(tr, dir())
	} else {
		err = readTree(tr, func(e treeEntry, body io.Reader) error {
			if body != nil {
				_, err := io.Copy(io.Discard, body)
				return err
			}
			return nil
		})
	}
	if err != nil {
		return err
	}
	if _, err := zbr.ReadByte(); err != io.EOF {
		if err != nil {
			return fmt.Errorf("decode archive: %w", err)
		}
		return fmt.Errorf("decode archive: %w: data after the compressed stream", ErrCorrupt)
	}
	if !fr.done {
		return fmt.Errorf("decode archive: %w: no last frame", ErrCorrupt)
	}
	return nil
}

// corruptReader marks decompression errors as corruption (the frame
// reader's own errors already are).
type corruptReader struct{ r io.Reader }

func (c *corruptReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF && !errors.Is(err, ErrCorrupt) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("decompress archive: %w: %v", ErrCorrupt, err)
	}
	return n, err
}

type progressReader struct {
	r      io.Reader
	fn     func(done, total uint64)
	total  uint64
	done   uint64
	report uint64
	ctx    context.Context
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += uint64(n)
	if p.done-p.report >= 4<<20 || err == io.EOF {
		p.report = p.done
		if p.ctx != nil {
			if cerr := p.ctx.Err(); cerr != nil {
				return n, cerr
			}
		}
		if p.fn != nil {
			p.fn(min(p.done, p.total), p.total)
		}
	}
	return n, err
}
