package rotate

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
)

// ErrNeedsKey is returned when an interrupted key rotation cannot be
// finished with the keyring given: it lacks the epoch being shredded
// (whose DEKs still need rewrapping). The store's own vault key file holds
// it until the rotation ends.
var ErrNeedsKey = errors.New("rotate: an interrupted key rotation needs the store's own vault key")

// ErrKeyOutsideStore is returned by the engine's RotateKeys when the store
// was opened with a vault key given from outside it (a key or recovery
// code passed in, another key file): a rotation replaces the store's own
// key file, DIR/vault.key, and would leave the outside copy holding the
// wiped epoch.
var ErrKeyOutsideStore = errors.New("rotate: the vault key was given from outside the store")

// DefaultKeysPerEvent is how many rewrapped DEKs one rekey event carries
// (48 bytes each in its body).
const DefaultKeysPerEvent = 1024

// Note is what every rotation result says about recovery codes.
const Note = "The shredded events are unreadable for everyone, from this device and from Arweave, as long as no copy of " +
	"the wiped key survives elsewhere: recovery codes exported before this rotation still hold it, so destroy them (they no " +
	"longer open the store) and export a new recovery code now."

// Env is what a rotation needs of the store it runs on. The caller holds
// the store's projection lock for the whole rotation: nothing reads the
// projections while they are deleted and rebuilt.
type Env struct {
	Dir  string // the store directory (vault.key, ucl.json, the journal)
	Log  *log.Log
	Keys *crypto.Keyring // the store's keyring, adopted in place as epochs change
	// KeyFingerprint is the fingerprint the store's metadata (ucl.json)
	// names; SetKeyFingerprint rewrites it (atomically) to name fp.
	KeyFingerprint    func() string
	SetKeyFingerprint func(fp string) error
	// CloseProjections closes the projection set before its directory is
	// deleted; CloseEmbedCache the embedding cache before it is rewritten;
	// Rebuild brings the projections (rebuilt from nothing) to the head.
	CloseProjections func() error
	CloseEmbedCache  func() error
	Rebuild          func(ctx context.Context, p Progress) error
	// Appended is told of each rekey event appended (the mirror loop
	// uploads them like any other).
	Appended func()
}

// Progress reports a rotation's stages: rekey-scan (events read), rekey
// (keys rewrapped).
type Progress func(stage string, done, total uint64)

// Result says what a rotation did.
type Result struct {
	FromEpoch   uint32 `json:"from_epoch"`
	ToEpoch     uint32 `json:"to_epoch"`
	Fingerprint string `json:"fingerprint"` // of the new current key
	// Rekeyed counts the events whose DEK was rewrapped under the new epoch
	// by RekeyEvents rekey events.
	Rekeyed     int `json:"rekeyed"`
	RekeyEvents int `json:"rekey_events"`
	// Shredded lists the store events this rotation made unreadable (their
	// chunk was tombstoned); ShreddedBefore counts those earlier rotations
	// had shredded already.
	Shredded       []Shredded `json:"shredded"`
	ShreddedBefore int        `json:"shredded_before"`
	// Local state: snapshots deleted (they were sealed under the shredded
	// epoch and may hold tombstoned content), embedding-cache entries
	// dropped (everything but the vectors of live chunks), corrupt/ files
	// deleted, and the projections rebuilt from the live log.
	SnapshotsDeleted   []string `json:"snapshots_deleted"`
	EmbedCacheDropped  int      `json:"embed_cache_dropped"`
	CorruptDeleted     []string `json:"corrupt_deleted"`
	ProjectionsRebuilt bool     `json:"projections_rebuilt"`
	// Resumed is set when this call finished a rotation a crash had
	// interrupted; RolledBack when it undid one that had not started
	// rewrapping.
	// ProjectSeconds is the part of Seconds spent rebuilding projections.
	ProjectSeconds float64 `json:"project_seconds"`
	Resumed        bool    `json:"resumed,omitempty"`
	RolledBack     bool    `json:"rolled_back,omitempty"`
	Seconds        float64 `json:"seconds"`
	Note           string  `json:"note"`
}

// Shredded is a store event a rotation shredded.
type Shredded struct {
	Seq     uint64 `json:"seq"`
	ChunkID string `json:"chunk_id"`
}

// embedCacheFile and corruptDir are the store's embedding cache and the
// directory of bytes cut from torn log tails, both rewritten by a
// rotation.
const (
	embedCacheFile = "embed-cache.db"
	corruptDir     = "corrupt"
)

// rotateCrashAt is a test hook: UCL_TEST_ROTATE_CRASH_AT=N kills the process
// with SIGKILL at the Nth step boundary of a rotation, so crash tests land
// kills at every point, deterministically.
var rotateCrashAt, _ = strconv.Atoi(os.Getenv("UCL_TEST_ROTATE_CRASH_AT"))

type rotation struct {
	env    Env
	path   string // the journal
	j      rotJournal
	res    *Result
	points int
	prog   Progress
	per    int
	// liveContent holds the content hashes of the chunks still live (the
	// embedding cache keeps only their vectors).
	liveContent map[[32]byte]bool
}

// point marks a step boundary (see rotateCrashAt).
func (r *rotation) point() {
	r.points++
	if rotateCrashAt > 0 && r.points == rotateCrashAt {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered before this returns
	}
}

// Start shreds tombstoned content: it makes vault-key epoch e+1, appends
// rekey events rewrapping the DEK of every event that is not tombstoned
// content (at most keysPerEvent keys each, 0: DefaultKeysPerEvent),
// deletes or rebuilds the local state that could hold tombstoned content
// or the old key (projections, snapshots, embedding cache, corrupt/), and
// wipes epoch e from the keyring and the key file. A journal
// (DIR/rotate.journal) makes it crash safe: Resume finishes a rotation
// that got as far as switching epochs and rolls back one that did not. A
// rotation an earlier call left unfinished is finished instead.
func Start(ctx context.Context, env Env, keysPerEvent int, p Progress) (*Result, error) {
	t0 := time.Now()
	r := &rotation{env: env, path: filepath.Join(env.Dir, JournalFile), prog: p, per: keysPerEvent}
	j, ok, err := readRotJournal(r.path)
	if err != nil {
		return nil, err
	}
	if ok {
		// Open finishes interrupted rotations; one still here failed then.
		r.j = j
		r.res = &Result{FromEpoch: j.From, ToEpoch: j.To, Resumed: true}
	} else {
		kr := env.Keys
		next, err := kr.WithNewEpoch()
		if err != nil {
			return nil, fmt.Errorf("rotate keys: %w", err)
		}
		fp, err := fpDigest(next.Fingerprint())
		if err != nil {
			return nil, fmt.Errorf("rotate keys: %w", err)
		}
		r.j = rotJournal{Phase: rotBegun, From: kr.Current(), To: next.Current(), NewFP: fp}
		r.res = &Result{FromEpoch: r.j.From, ToEpoch: r.j.To}
		if err := writeRotJournal(r.path, r.j); err != nil {
			return nil, err
		}
		r.point()
		if err := SaveKeys(next, store.VaultKeyFile(env.Dir)); err != nil {
			return nil, fmt.Errorf("rotate keys: save the new key: %w", err)
		}
		r.point()
	}
	if err := r.run(ctx); err != nil {
		return nil, err
	}
	r.res.Seconds = time.Since(t0).Seconds()
	return r.res, nil
}

// Interrupted reports the rotation a crash interrupted in dir, if any: the
// epoch it shreds and the new one.
func Interrupted(dir string) (from, to uint32, ok bool, err error) {
	j, ok, err := readRotJournal(filepath.Join(dir, JournalFile))
	return j.From, j.To, ok, err
}

// Resume finishes or rolls back a rotation a crash interrupted; the
// engine's Open calls it. It returns nil when there was none.
func Resume(ctx context.Context, env Env) (*Result, error) {
	path := filepath.Join(env.Dir, JournalFile)
	j, ok, err := readRotJournal(path)
	if err != nil || !ok {
		return nil, err
	}
	t0 := time.Now()
	r := &rotation{env: env, path: path, j: j, res: &Result{FromEpoch: j.From, ToEpoch: j.To, Resumed: true}}
	if j.Phase == rotBegun {
		if err := r.rollback(); err != nil {
			return nil, err
		}
		r.res.Resumed, r.res.RolledBack = false, true
		r.res.Seconds = time.Since(t0).Seconds()
		return r.res, nil
	}
	if err := r.run(ctx); err != nil {
		return nil, err
	}
	r.res.Seconds = time.Since(t0).Seconds()
	return r.res, nil
}

// rollback undoes a rotation that never switched epochs: no event is
// wrapped under the new epoch, so its key is dropped from the key file,
// the metadata names the old key again and the journal goes.
func (r *rotation) rollback() error {
	env := r.env
	kr := env.Keys
	if kr.Has(r.j.To) {
		if !kr.Has(r.j.From) {
			return fmt.Errorf("roll back the key rotation: %w (epoch %d)", ErrNeedsKey, r.j.From)
		}
		old, err := kr.Without(r.j.To)
		if err != nil {
			return err
		}
		if err := SaveKeys(old, store.VaultKeyFile(env.Dir)); err != nil {
			return fmt.Errorf("roll back the key rotation: %w", err)
		}
		kr.Adopt(old)
		env.Log.KeysChanged()
	}
	if fp := kr.FingerprintOf(r.j.From); fp != "" && env.KeyFingerprint() != fp {
		if err := env.SetKeyFingerprint(fp); err != nil {
			return fmt.Errorf("roll back the key rotation: %w", err)
		}
	}
	if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("roll back the key rotation: %w", err)
	}
	return nil
}

// run takes the rotation from its journal's phase to the end.
func (r *rotation) run(ctx context.Context) error {
	env := r.env
	dir := env.Dir
	if r.j.Phase <= rotKeyed {
		// The keyring in memory may still be the old one (a fresh
		// rotation): take the key file's, which holds both epochs.
		if !env.Keys.Has(r.j.To) {
			both, err := env.Keys.Reload(store.VaultKeyFile(dir))
			if err != nil {
				return fmt.Errorf("rotate keys: %w", err)
			}
			if !both.Has(r.j.To) || !both.Has(r.j.From) {
				return fmt.Errorf("rotate keys: %w (epochs %d and %d)", ErrNeedsKey, r.j.From, r.j.To)
			}
			if _, err := env.Log.SwapKeys(func() error { env.Keys.Adopt(both); return nil }); err != nil {
				return err
			}
		}
		if fp, _ := fpDigest(env.Keys.FingerprintOf(r.j.To)); fp != r.j.NewFP {
			return fmt.Errorf("rotate keys: %w: the key file's epoch %d is not the journal's", ErrBadJournal, r.j.To)
		}
		if fp := env.Keys.FingerprintOf(r.j.To); env.KeyFingerprint() != fp {
			if err := env.SetKeyFingerprint(fp); err != nil {
				return fmt.Errorf("rotate keys: %w", err)
			}
			r.point()
		}
		if r.j.Phase < rotKeyed {
			r.j.Phase = rotKeyed
			if err := writeRotJournal(r.path, r.j); err != nil {
				return err
			}
			r.point()
		}
	}
	if r.j.Phase == rotKeyed {
		if !env.Keys.Has(r.j.From) {
			return fmt.Errorf("rotate keys: %w (epoch %d)", ErrNeedsKey, r.j.From)
		}
		if err := r.rekey(ctx); err != nil {
			return err
		}
		r.j.Phase = rotRekeyed
		if err := writeRotJournal(r.path, r.j); err != nil {
			return err
		}
		r.point()
	}
	if r.j.Phase == rotRekeyed {
		if err := r.clean(ctx); err != nil {
			return err
		}
		r.j.Phase = rotCleaned
		if err := writeRotJournal(r.path, r.j); err != nil {
			return err
		}
		r.point()
	}
	// rotCleaned: wipe the old epoch.
	kr := env.Keys
	if kr.Has(r.j.From) {
		final, err := kr.Without(r.j.From)
		if err != nil {
			return err
		}
		if err := SaveKeys(final, store.VaultKeyFile(dir)); err != nil {
			return fmt.Errorf("rotate keys: wipe epoch %d: %w", r.j.From, err)
		}
		r.point()
		kr.Adopt(final)
		env.Log.KeysChanged()
	} else if f, err := env.Keys.Reload(store.VaultKeyFile(dir)); err == nil && f.Has(r.j.From) {
		// Resumed with a keyring given on the command line: the file
		// still holds the old epoch.
		final, err := f.Without(r.j.From)
		if err != nil {
			return err
		}
		if err := SaveKeys(final, store.VaultKeyFile(dir)); err != nil {
			return fmt.Errorf("rotate keys: wipe epoch %d: %w", r.j.From, err)
		}
	}
	if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotate keys: remove the journal: %w", err)
	}
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("rotate keys: remove the journal: %w", err)
	}
	r.point()
	r.res.Fingerprint = kr.Fingerprint()
	r.res.Note = Note
	// The projections were deleted in clean; rebuild them now, from the
	// log where shredded events have no content any more.
	tp := time.Now()
	defer func() { r.res.ProjectSeconds = time.Since(tp).Seconds() }()
	if err := env.Rebuild(ctx, r.prog); err != nil {
		return fmt.Errorf("rotate keys: the rotation is complete; rebuilding the projections failed: %w", err)
	}
	r.res.ProjectionsRebuilt = true
	if r.res.Shredded == nil {
		r.res.Shredded = []Shredded{}
	}
	if r.res.SnapshotsDeleted == nil {
		r.res.SnapshotsDeleted = []string{}
	}
	if r.res.CorruptDeleted == nil {
		r.res.CorruptDeleted = []string{}
	}
	return nil
}

// liveChunk is a stored chunk still live during the rotation's pass.
type liveChunk struct {
	session string
	time    int64
	seqs    []uint64
	content [][32]byte
}

// rekey appends rekey events for every event up to the head that is not
// tombstoned content and whose DEK is not yet wrapped under the new
// epoch. Rerun after a crash, it writes only what is still missing.
func (r *rotation) rekey(ctx context.Context) error {
	env := r.env
	l := env.Log
	// Every event after head is wrapped under the new epoch (SwapKeys).
	head, err := l.SwapKeys(func() error { return nil })
	if err != nil {
		return err
	}
	rk, err := l.Rekeys()
	if err != nil {
		return fmt.Errorf("rotate keys: %w", err)
	}
	live := map[string]*liveChunk{}
	dead := map[uint64]string{}
	var todo []log.Header
	var n uint64
	err = l.Events(ctx, 1, head, func(ev *log.Event) error {
		n++
		if r.prog != nil && n%4096 == 0 {
			r.prog("rekey-scan", n, head)
		}
		if ev.IsShredded() {
			r.res.ShreddedBefore++
			return nil
		}
		body := ev.Body
		if ed, ok := body.(*log.Edit); ok {
			// An edit's version is content of its chunk like the
			// original: a tombstone of the chunk shreds every version.
			body = &ed.Store
		}
		switch b := body.(type) {
		case *log.Store:
			c := live[b.ChunkID]
			if c == nil {
				c = &liveChunk{}
				live[b.ChunkID] = c
			}
			c.session, c.time = b.Session, b.Time
			c.seqs = append(c.seqs, ev.Seq)
			c.content = append(c.content, sha256.Sum256([]byte(b.Content)))
		case *log.Tombstone:
			kill := func(id string, c *liveChunk) {
				for _, q := range c.seqs {
					dead[q] = id
				}
				delete(live, id)
			}
			if b.Session == "" && b.From == 0 && b.To == 0 {
				// Chunk ids only (the common case): no scan of every
				// live chunk.
				for _, id := range b.Chunks {
					if c, ok := live[id]; ok {
						kill(id, c)
					}
				}
				break
			}
			for id, c := range live {
				if b.Matches(&log.Store{ChunkID: id, Session: c.session, Time: c.time}) {
					kill(id, c)
				}
			}
		}
		if ev.KeyEpoch != r.j.To && !rk.Covered(ev.Seq, r.j.To) {
			todo = append(todo, ev.Header)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rotate keys: read the log: %w", err)
	}
	r.liveContent = map[[32]byte]bool{}
	for _, c := range live {
		for _, h := range c.content {
			r.liveContent[h] = true
		}
	}
	for q, id := range dead {
		if !rk.Covered(q, r.j.To) {
			r.res.Shredded = append(r.res.Shredded, Shredded{Seq: q, ChunkID: id})
		}
	}
	sort.Slice(r.res.Shredded, func(i, k int) bool { return r.res.Shredded[i].Seq < r.res.Shredded[k].Seq })
	w, err := env.Keys.Wrapper(r.j.To)
	if err != nil {
		return fmt.Errorf("rotate keys: %w", err)
	}
	per := r.per
	if per <= 0 {
		per = DefaultKeysPerEvent
	}
	// Every DEK is rewrapped before the first rekey event is written:
	// appending one drops the log's rekey map, which DEKs of older epochs
	// are looked up in.
	var all []log.WrappedKey
	for i := range todo {
		h := &todo[i]
		if _, ok := dead[h.Seq]; ok {
			continue
		}
		dek, err := l.DataKey(h)
		if err != nil {
			return fmt.Errorf("rotate keys: %w", err)
		}
		wk := log.WrappedKey{Seq: h.Seq}
		err = w.Wrap(wk.Wrapped[:], dek[:])
		clear(dek[:])
		if err != nil {
			return err
		}
		all = append(all, wk)
	}
	write := func(keys []log.WrappedKey) error {
		if _, err := l.Append(ctx, log.Entry{Body: &log.Rekey{Epoch: r.j.To, Keys: keys}}); err != nil {
			return fmt.Errorf("rotate keys: append rekey event: %w", err)
		}
		env.Appended() // the mirror loop uploads rekey events like any other
		r.res.RekeyEvents++
		r.res.Rekeyed += len(keys)
		if r.prog != nil {
			r.prog("rekey", uint64(r.res.Rekeyed), uint64(len(all)))
		}
		r.point()
		return nil
	}
	for len(all) > 0 {
		n := min(per, len(all))
		if err := write(all[:n]); err != nil {
			return err
		}
		all = all[n:]
	}
	// At least one rekey event per rotation: it is what marks, in the log
	// and on Arweave, that events of the old epoch without a rewrapped key
	// were shredded by design.
	if r.res.RekeyEvents == 0 && !r.hasRekeyTo(rk) {
		return write(nil)
	}
	return nil
}

// hasRekeyTo reports whether the log already holds a rekey event to the new
// epoch (a resumed rotation).
func (r *rotation) hasRekeyTo(rk *log.Rekeys) bool { return rk.Newest() >= r.j.To }

// clean removes or rewrites the local state that may hold tombstoned
// content or depend on the old epoch.
func (r *rotation) clean(ctx context.Context) error {
	env := r.env
	path := func(name string) string { return filepath.Join(env.Dir, name) }
	// Projections: deleted here, rebuilt from the live log once the old
	// epoch is gone (run), so no projection file ever held shredded text
	// after the rotation, whatever compaction each one does.
	if err := env.CloseProjections(); err != nil {
		return fmt.Errorf("rotate keys: close projections: %w", err)
	}
	if err := os.RemoveAll(path(store.ProjectionsDir)); err != nil {
		return fmt.Errorf("rotate keys: remove projections: %w", err)
	}
	r.point()
	// Snapshots: every local one predates the rotation, is sealed under an
	// epoch being wiped and may hold tombstoned content. Deleted.
	snaps := path(store.SnapshotsDir)
	if ents, err := os.ReadDir(snaps); err == nil {
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(snaps, e.Name())); err != nil {
				return fmt.Errorf("rotate keys: delete snapshot: %w", err)
			}
			if e.Name()[0] != '.' {
				r.res.SnapshotsDeleted = append(r.res.SnapshotsDeleted, e.Name())
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotate keys: list snapshots: %w", err)
	}
	r.point()
	// Embedding cache: keep only the vectors of live chunks (a resumed
	// rotation that lost the live set keeps nothing: the cache refills).
	if err := env.CloseEmbedCache(); err != nil {
		return fmt.Errorf("rotate keys: close embedding cache: %w", err)
	}
	live := r.liveContent
	dropped, err := vector.KeepOnly(path(embedCacheFile), func(h [32]byte) bool { return live[h] })
	if err != nil {
		return fmt.Errorf("rotate keys: %w", err)
	}
	r.res.EmbedCacheDropped = dropped
	r.point()
	// corrupt/: bytes cut from torn log tails, events sealed under DEKs
	// wrapped under old epochs. Never acknowledged, and after the wipe
	// unreadable: deleted, so nothing sealed under the shredded epoch stays.
	cdir := path(corruptDir)
	if ents, err := os.ReadDir(cdir); err == nil {
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(cdir, e.Name())); err != nil {
				return fmt.Errorf("rotate keys: delete %s: %w", e.Name(), err)
			}
			r.res.CorruptDeleted = append(r.res.CorruptDeleted, e.Name())
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotate keys: list corrupt/: %w", err)
	}
	r.point()
	return ctx.Err()
}

// ShredCut returns the seq before which every tombstone of l is shredded: the
// first rekey event of the newest completed rotation (one whose old epoch
// the keyring no longer holds), 0 when no rotation completed. A rotation
// rewraps every event up to its first rekey event except tombstoned
// content, so a tombstone before that point had its targets shredded.
// (kr is the store's keyring; nil: 0.)
func ShredCut(ctx context.Context, l *log.Log, kr *crypto.Keyring) (uint64, error) {
	if kr == nil {
		return 0, nil
	}
	first := map[uint32]uint64{}
	err := l.ForEachHeader(ctx, 0, 0, func(h *log.Header) error {
		if h.Type == log.TypeRekey {
			if _, ok := first[h.KeyEpoch]; !ok {
				first[h.KeyEpoch] = h.Seq
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var cut uint64
	for e, seq := range first {
		if e > 1 && !kr.Has(e-1) && seq > cut {
			cut = seq
		}
	}
	return cut, nil
}

// SaveKeys replaces the store's key file with kr, then overwrites the
// replaced file's bytes through a descriptor opened before the rename, so
// the old keys do not linger in its freed blocks (on file systems that
// write in place; copy-on-write ones and SSD remapping keep no promise).
// The new file is in place before anything is overwritten: a crash
// between the two loses nothing.
func SaveKeys(kr *crypto.Keyring, path string) error {
	old, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open the key file: %w", err)
	}
	if err := kr.Save(path); err != nil {
		if old != nil {
			old.Close()
		}
		return err
	}
	if old == nil {
		return nil
	}
	defer old.Close()
	fi, err := old.Stat()
	if err != nil {
		return fmt.Errorf("scrub the replaced key file: %w", err)
	}
	if _, err := old.WriteAt(make([]byte, fi.Size()), 0); err != nil {
		return fmt.Errorf("scrub the replaced key file: %w", err)
	}
	if err := old.Sync(); err != nil {
		return fmt.Errorf("scrub the replaced key file: %w", err)
	}
	return nil
}
