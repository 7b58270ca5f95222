package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projstd"
)

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// Name is the snapshot to restore; "" tries every snapshot, newest
	// first, until one is usable.
	Name string
	// Fallback rebuilds the projections from the log when no snapshot is
	// usable. Without it Restore returns the refusal and changes nothing.
	Fallback bool
	// Progress reports verification, extraction and replay (or the rebuild).
	Progress Progress
}

// Refusal is a snapshot Restore did not use, and why.
type Refusal struct {
	Name string `json:"name"`
	Err  error  `json:"-"`
	// Reason is Err's message (for JSON).
	Reason string `json:"reason"`
}

// RestoreResult says what Restore did.
type RestoreResult struct {
	// Snapshot is the name restored ("" when the projections were rebuilt).
	Snapshot string `json:"snapshot,omitempty"`
	// Seq is the snapshot's seq; Replayed the events applied after it (on
	// fallback: every event).
	Seq      uint64 `json:"seq"`
	Replayed uint64 `json:"replayed"`
	Head     uint64 `json:"head"`
	// FellBack is true when no snapshot was usable and the projections
	// were rebuilt from the log.
	FellBack bool      `json:"fell_back"`
	Refused  []Refusal `json:"refused,omitempty"`
	// Digests are the projections' digests at Head.
	Digests map[string]string `json:"digests"`
}

// Refused reports whether err is a reason to refuse a snapshot (as
// opposed to an I/O failure or a cancellation).
func Refused(err error) bool {
	for _, e := range []error{ErrNoSnapshot, ErrCorrupt, ErrForeign, ErrAhead, ErrDiverged, ErrKey, ErrIncompatible, ErrEmbedder} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Restore replaces the projections with a snapshot's state and replays the
// log after it (package doc). Snapshots that fail a check are refused;
// when none is usable, Fallback decides between a full rebuild and an
// error wrapping the (first) refusal. The projections must not be open
// elsewhere in the process.
func Restore(ctx context.Context, env Env, o RestoreOptions) (*RestoreResult, error) {
	tidy(env.ProjDir)
	removeTemps(env.SnapDir)
	var cands []Info
	res := &RestoreResult{}
	if o.Name != "" {
		in, err := Find(env.SnapDir, o.Name)
		if err != nil {
			res.Refused = append(res.Refused, refusal(o.Name, err))
		} else {
			cands = append(cands, in)
		}
	} else {
		l, err := List(env.SnapDir)
		if err != nil {
			return nil, err
		}
		if len(l) == 0 {
			res.Refused = append(res.Refused, refusal("", fmt.Errorf("restore: %w in %s", ErrNoSnapshot, env.SnapDir)))
		}
		cands = l
	}
	for _, in := range cands {
		err := in.Err
		if err == nil {
			err = restoreOne(ctx, env, in, o, res)
		}
		if err == nil {
			return res, nil
		}
		if !Refused(err) {
			return nil, err
		}
		res.Refused = append(res.Refused, refusal(in.Name, err))
	}
	if !o.Fallback {
		return res, fmt.Errorf("restore: %w", res.Refused[0].Err)
	}
	if err := rebuild(ctx, env, o, res); err != nil {
		return nil, err
	}
	return res, nil
}

// tidy cleans up after a Restore that crashed: extraction directories are
// removed; an old state set aside is put back when the projections
// directory is missing (crash between the renames), else removed.
func tidy(projDir string) {
	parent, base := filepath.Dir(filepath.Clean(projDir)), filepath.Base(projDir)
	tmps, _ := filepath.Glob(filepath.Join(parent, ".projections-restore-*"))
	for _, d := range tmps {
		os.RemoveAll(d)
	}
	olds, _ := filepath.Glob(filepath.Join(parent, "."+base+"-old-*"))
	for _, d := range olds {
		if _, err := os.Stat(projDir); errors.Is(err, os.ErrNotExist) {
			if os.Rename(d, projDir) == nil {
				continue
			}
		}
		os.RemoveAll(d)
	}
	if len(tmps)+len(olds) > 0 {
		fsutil.SyncDir(parent)
	}
}

func refusal(name string, err error) Refusal {
	return Refusal{Name: name, Err: err, Reason: err.Error()}
}

// rebuild is the fallback: every projection rebuilt from the log.
func rebuild(ctx context.Context, env Env, o RestoreOptions, res *RestoreResult) error {
	set, err := projstd.Open(env.ProjDir, env.Log, env.Set)
	if err != nil {
		return fmt.Errorf("rebuild projections: %w", err)
	}
	defer set.Close()
	if err := set.Projector.Rebuild(ctx, nil, o.Progress.stage("rebuild")); err != nil {
		return fmt.Errorf("rebuild projections: %w", err)
	}
	res.FellBack = true
	res.Snapshot, res.Seq = "", 0
	res.Head, _ = env.Log.Head()
	res.Replayed = res.Head
	if res.Digests, err = set.Projector.Digests(); err != nil {
		return err
	}
	return set.Close()
}

func restoreOne(ctx context.Context, env Env, in Info, o RestoreOptions, res *RestoreResult) error {
	m := in.Manifest
	if err := CheckLog(m, env.Log, env.LogID); err != nil {
		return err
	}
	if err := CheckEmbedder(m, env.Set.Vectors); err != nil {
		return err
	}
	arch := filepath.Join(in.Dir, ArchiveFile)
	if err := checkArchiveFile(arch, m); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(env.ProjDir))
	if err := fsutil.MkdirAllSync(parent, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".projections-restore-*")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	swapped := false
	defer func() {
		if !swapped {
			os.RemoveAll(tmp)
		}
	}()
	if err := decryptArchive(ctx, arch, m, env.Keys, o.Progress.stage("extract"), func() string { return tmp }); err != nil {
		return fmt.Errorf("restore %s: %w", m.Name, err)
	}
	// Swap, keeping the old state aside until the restored one passed its
	// checks. A crash in between leaves either the old state, no state
	// (rebuilt on next open), or the restored state at N with the old one
	// aside (removed by the next Restore); all resume correctly.
	old := ""
	if _, err := os.Stat(env.ProjDir); err == nil {
		old = filepath.Join(parent, "."+filepath.Base(env.ProjDir)+"-old-"+m.ID[:8])
		os.RemoveAll(old)
		if err := os.Rename(env.ProjDir, old); err != nil {
			return fmt.Errorf("restore: move old projections aside: %w", err)
		}
	}
	rollback := func() {
		os.RemoveAll(env.ProjDir)
		if old != "" {
			os.Rename(old, env.ProjDir)
		}
		fsutil.SyncDir(parent)
	}
	if err := os.Rename(tmp, env.ProjDir); err != nil {
		rollback()
		return fmt.Errorf("restore: move restored projections in: %w", err)
	}
	swapped = true
	if err := fsutil.SyncDir(parent); err != nil {
		rollback()
		return fmt.Errorf("restore: %w", err)
	}
	// Opened once, pinned at N for the checks, then driven by the real
	// log for the replay (opening the set can be the slow part).
	set, err := checkRestored(env.ProjDir, env, m)
	if err != nil {
		rollback()
		return err
	}
	defer set.Close()
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("restore: remove old projections: %w", err)
		}
	}
	pr, err := projections.NewProjector(env.Log, set.Projector.Projections(), env.Set.Projector)
	if err != nil {
		return err
	}
	if err := pr.CatchUp(ctx, o.Progress.stage("replay")); err != nil {
		return fmt.Errorf("restore: replay after seq %d: %w", m.Seq, err)
	}
	res.Snapshot, res.Seq = m.Name, m.Seq
	res.Head, _ = env.Log.Head()
	res.Replayed = res.Head - m.Seq
	if res.Digests, err = pr.Digests(); err != nil {
		return err
	}
	return set.Close()
}

// CheckEmbedder refuses (ErrEmbedder) a snapshot whose manifest records
// another embedder than the one o selects. It is checked before anything
// is extracted: the vectors would otherwise be rebuilt on open or fail the
// digest check as if the archive were corrupt. A format 1 manifest records
// no embedder; the digest check still catches a mismatch then.
func CheckEmbedder(m *Manifest, o projstd.VectorOptions) error {
	if m.Embedder == nil {
		return nil
	}
	name, model, err := o.EmbedderID()
	if err != nil {
		return fmt.Errorf("check snapshot %s embedder: %w", m.Name, err)
	}
	if name != m.Embedder.Name || model != m.Embedder.ModelHash {
		here := &EmbedderState{Name: name, ModelHash: model}
		return fmt.Errorf("restore %s: %w: the snapshot's vectors are from embedder %s, this store uses %s", m.Name, ErrEmbedder, m.Embedder, here)
	}
	return nil
}

// checkRestored opens the set extracted in dir, pinned at the snapshot's
// seq, and checks its projections, versions, checkpoints and digests are
// the manifest's. It returns the open set.
func checkRestored(dir string, env Env, m *Manifest) (_ *projstd.Set, err error) {
	set, err := projstd.Open(dir, pinned{env.Log, m.Seq, m.Head()}, env.Set)
	if err != nil {
		return nil, fmt.Errorf("restore %s: open extracted projections: %w: %v", m.Name, ErrCorrupt, err)
	}
	defer func() {
		if err != nil {
			set.Close()
		}
	}()
	st, err := set.Projector.Status()
	if err != nil {
		return nil, fmt.Errorf("restore %s: read extracted projections: %w: %v", m.Name, ErrCorrupt, err)
	}
	if len(st) != len(m.Projections) {
		return nil, fmt.Errorf("restore %s: %w: snapshot has %d projections, this build %d", m.Name, ErrIncompatible, len(m.Projections), len(st))
	}
	for i, s := range st {
		want := m.Projections[i]
		if s.Name != want.Name || s.Version != want.Version || (s.StoredVersion != 0 && s.StoredVersion != s.Version) {
			return nil, fmt.Errorf("restore %s: %w: projection %s v%d in the snapshot, %s v%d (stored v%d) here", m.Name, ErrIncompatible, want.Name, want.Version, s.Name, s.Version, s.StoredVersion)
		}
		if s.Checkpoint.Seq != m.Seq || s.Checkpoint.Hash != m.Head() {
			return nil, fmt.Errorf("restore %s: %w: projection %s is at seq %d, snapshot at %d", m.Name, ErrCorrupt, s.Name, s.Checkpoint.Seq, m.Seq)
		}
		if s.Digest != want.Digest {
			return nil, fmt.Errorf("restore %s: %w: projection %s digest %.12s, manifest says %.12s", m.Name, ErrCorrupt, s.Name, s.Digest, want.Digest)
		}
	}
	return set, nil
}

// Import stores a snapshot received as bytes (e.g. from FetchPublished) in
// snapDir after checking the archive against the manifest. It returns the
// local snapshot; an existing snapshot of the same name and id is kept.
func Import(snapDir string, manifest, archive []byte) (Info, error) {
	m, err := ParseManifest(manifest)
	if err != nil {
		return Info{}, fmt.Errorf("import snapshot: %w", err)
	}
	sum := sha256.Sum256(archive)
	if int64(len(archive)) != m.Archive.Size || hex.EncodeToString(sum[:]) != m.Archive.SHA256 {
		return Info{}, fmt.Errorf("import snapshot %s: %w: archive does not match its manifest", m.Name, ErrCorrupt)
	}
	final := filepath.Join(snapDir, m.Name)
	if old, err := ReadManifest(final); err == nil {
		if old.ID == m.ID {
			return Info{Name: m.Name, Dir: final, Manifest: old}, nil
		}
		return Info{}, fmt.Errorf("import snapshot: %s already exists with another id", m.Name)
	}
	if err := fsutil.MkdirAllSync(snapDir, 0o700); err != nil {
		return Info{}, err
	}
	tmp := filepath.Join(snapDir, ".tmp-"+m.Name)
	os.RemoveAll(tmp)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return Info{}, fmt.Errorf("import snapshot: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := fsutil.WriteFileAtomic(filepath.Join(tmp, ArchiveFile), archive, 0o600); err != nil {
		return Info{}, fmt.Errorf("import snapshot: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(tmp, ManifestFile), manifest, 0o600); err != nil {
		return Info{}, fmt.Errorf("import snapshot: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return Info{}, fmt.Errorf("import snapshot: %w", err)
	}
	ok = true
	if err := fsutil.SyncDir(snapDir); err != nil {
		return Info{}, err
	}
	return Info{Name: m.Name, Dir: final, Manifest: m}, nil
}
