package ucl

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

// ErrRotationNeedsKey is returned when an interrupted key rotation cannot
// be finished with the keyring given: it lacks the epoch being shredded
// (whose DEKs still need rewrapping). The store's own vault key file holds
// it until the rotation ends.
var ErrRotationNeedsKey = errors.New("ucl: an interrupted key rotation needs the store's own vault key")

// ErrKeyOutsideStore is returned by RotateKeys when the store was opened
// with a vault key given from outside it (a key or recovery code passed in,
// another key file): a rotation replaces the store's own key file,
// DIR/vault.key, and would leave the outside copy holding the wiped epoch.
var ErrKeyOutsideStore = errors.New("ucl: the vault key was given from outside the store")

// DefaultRekeyKeysPerEvent is how many rewrapped DEKs one rekey event
// carries (48 bytes each in its body).
const DefaultRekeyKeysPerEvent = 1024

// RotateNote is what every rotation result says about recovery codes.
const RotateNote = "The shredded events are unreadable for everyone, from this device and from Arweave, as long as no copy of " +
	"the wiped key survives elsewhere: recovery codes exported before this rotation still hold it, so destroy them (they no " +
	"longer open the store) and export a new recovery code now."

// RotateKeysRequest asks for a vault-key rotation (shred).
type RotateKeysRequest struct {
	// KeysPerEvent caps the DEKs per rekey event (0: DefaultRekeyKeysPerEvent).
	KeysPerEvent int      `json:"keys_per_event,omitempty"`
	Progress     Progress `json:"-"`
}

// RotateKeysResult says what a rotation did.
type RotateKeysResult struct {
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
	Shredded       []ShreddedEvent `json:"shredded"`
	ShreddedBefore int             `json:"shredded_before"`
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

// ShreddedEvent is a store event a rotation shredded.
type ShreddedEvent struct {
	Seq     uint64 `json:"seq"`
	ChunkID string `json:"chunk_id"`
}

// rotateCrashAt is a test hook: UCL_TEST_ROTATE_CRASH_AT=N kills the process
// with SIGKILL at the Nth step boundary of a rotation, so crash tests land
// kills at every point, deterministically.
var rotateCrashAt, _ = strconv.Atoi(os.Getenv("UCL_TEST_ROTATE_CRASH_AT"))

type rotation struct {
	s      *Store
	path   string // the journal
	j      rotJournal
	res    *RotateKeysResult
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

// RotateKeys shreds tombstoned content: it makes vault-key epoch e+1,
// appends rekey events rewrapping the DEK of every event that is not
// tombstoned content, deletes or rebuilds the local state that could hold
// tombstoned content or the old key (projections, snapshots, embedding
// cache, corrupt/), and wipes epoch e from the keyring and the key file.
// A journal (DIR/rotate.journal) makes it crash safe: Open finishes a
// rotation that got as far as switching epochs and rolls back one that
// did not.
func (s *Store) RotateKeys(ctx context.Context, req RotateKeysRequest) (*RotateKeysResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	if p := s.opts.VaultKeyPath; (p == "" && s.opts.Keys != nil) || (p != "" && !sameFile(p, store.VaultKeyFile(s.st.Dir))) {
		return nil, fmt.Errorf("rotate keys: %w: a rotation rewrites %s", ErrKeyOutsideStore, store.VaultKeyFile(s.st.Dir))
	}
	s.projMu.Lock()
	defer s.projMu.Unlock()
	t0 := time.Now()
	r := &rotation{s: s, path: s.st.Path(RotateJournalFile), prog: req.Progress, per: req.KeysPerEvent}
	j, ok, err := readRotJournal(r.path)
	if err != nil {
		return nil, err
	}
	if ok {
		// Open finishes interrupted rotations; one still here failed then.
		r.j = j
		r.res = &RotateKeysResult{FromEpoch: j.From, ToEpoch: j.To, Resumed: true}
	} else {
		kr := s.st.Keys
		next, err := kr.WithNewEpoch()
		if err != nil {
			return nil, fmt.Errorf("rotate keys: %w", err)
		}
		fp, err := fpDigest(next.Fingerprint())
		if err != nil {
			return nil, fmt.Errorf("rotate keys: %w", err)
		}
		r.j = rotJournal{Phase: rotBegun, From: kr.Current(), To: next.Current(), NewFP: fp}
		r.res = &RotateKeysResult{FromEpoch: r.j.From, ToEpoch: r.j.To}
		if err := writeRotJournal(r.path, r.j); err != nil {
			return nil, err
		}
		r.point()
		if err := saveKeys(next, store.VaultKeyFile(s.st.Dir)); err != nil {
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

// resumeRotation finishes or rolls back a rotation a crash interrupted;
// Open calls it. It returns nil when there was none.
func (s *Store) resumeRotation(ctx context.Context) (*RotateKeysResult, error) {
	path := s.st.Path(RotateJournalFile)
	j, ok, err := readRotJournal(path)
	if err != nil || !ok {
		return nil, err
	}
	if err := s.needKeys(); err != nil {
		return nil, fmt.Errorf("finish the interrupted key rotation (epoch %d to %d): %w", j.From, j.To, err)
	}
	s.projMu.Lock()
	defer s.projMu.Unlock()
	t0 := time.Now()
	r := &rotation{s: s, path: path, j: j, res: &RotateKeysResult{FromEpoch: j.From, ToEpoch: j.To, Resumed: true}}
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
	s := r.s
	kr := s.st.Keys
	if kr.Has(r.j.To) {
		if !kr.Has(r.j.From) {
			return fmt.Errorf("roll back the key rotation: %w (epoch %d)", ErrRotationNeedsKey, r.j.From)
		}
		old, err := kr.Without(r.j.To)
		if err != nil {
			return err
		}
		if err := saveKeys(old, store.VaultKeyFile(s.st.Dir)); err != nil {
			return fmt.Errorf("roll back the key rotation: %w", err)
		}
		kr.Adopt(old)
		s.st.Log.KeysChanged()
	}
	if fp := kr.FingerprintOf(r.j.From); fp != "" && s.st.Meta.KeyFingerprint != fp {
		m := s.st.Meta
		m.KeyFingerprint = fp
		if err := store.WriteMeta(s.st.Dir, m); err != nil {
			return fmt.Errorf("roll back the key rotation: %w", err)
		}
		s.st.Meta = m
	}
	if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("roll back the key rotation: %w", err)
	}
	return nil
}

// run takes the rotation from its journal's phase to the end.
func (r *rotation) run(ctx context.Context) error {
	s := r.s
	dir := s.st.Dir
	if r.j.Phase <= rotKeyed {
		// The keyring in memory may still be the old one (a fresh
		// rotation): take the key file's, which holds both epochs.
		if !s.st.Keys.Has(r.j.To) {
			both, err := s.st.Keys.Reload(store.VaultKeyFile(dir))
			if err != nil {
				return fmt.Errorf("rotate keys: %w", err)
			}
			if !both.Has(r.j.To) || !both.Has(r.j.From) {
				return fmt.Errorf("rotate keys: %w (epochs %d and %d)", ErrRotationNeedsKey, r.j.From, r.j.To)
			}
			if _, err := s.st.Log.SwapKeys(func() error { s.st.Keys.Adopt(both); return nil }); err != nil {
				return err
			}
		}
		if fp, _ := fpDigest(s.st.Keys.FingerprintOf(r.j.To)); fp != r.j.NewFP {
			return fmt.Errorf("rotate keys: %w: the key file's epoch %d is not the journal's", ErrBadRotateJournal, r.j.To)
		}
		if m := s.st.Meta; m.KeyFingerprint != s.st.Keys.FingerprintOf(r.j.To) {
			m.KeyFingerprint = s.st.Keys.FingerprintOf(r.j.To)
			if err := store.WriteMeta(dir, m); err != nil {
				return fmt.Errorf("rotate keys: %w", err)
			}
			s.st.Meta = m
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
		if !s.st.Keys.Has(r.j.From) {
			return fmt.Errorf("rotate keys: %w (epoch %d)", ErrRotationNeedsKey, r.j.From)
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
	kr := s.st.Keys
	if kr.Has(r.j.From) {
		final, err := kr.Without(r.j.From)
		if err != nil {
			return err
		}
		if err := saveKeys(final, store.VaultKeyFile(dir)); err != nil {
			return fmt.Errorf("rotate keys: wipe epoch %d: %w", r.j.From, err)
		}
		r.point()
		kr.Adopt(final)
		s.st.Log.KeysChanged()
	} else if f, err := s.st.Keys.Reload(store.VaultKeyFile(dir)); err == nil && f.Has(r.j.From) {
		// Resumed with a keyring given on the command line: the file
		// still holds the old epoch.
		final, err := f.Without(r.j.From)
		if err != nil {
			return err
		}
		if err := saveKeys(final, store.VaultKeyFile(dir)); err != nil {
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
	r.res.Note = RotateNote
	// The projections were deleted in clean; rebuild them now, from the
	// log where shredded events have no content any more.
	tp := time.Now()
	defer func() { r.res.ProjectSeconds = time.Since(tp).Seconds() }()
	if _, err := s.caughtUpLocked(ctx, r.prog); err != nil {
		return fmt.Errorf("rotate keys: the rotation is complete; rebuilding the projections failed: %w", err)
	}
	r.res.ProjectionsRebuilt = true
	if r.res.Shredded == nil {
		r.res.Shredded = []ShreddedEvent{}
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
	s := r.s
	l := s.st.Log
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
			r.res.Shredded = append(r.res.Shredded, ShreddedEvent{Seq: q, ChunkID: id})
		}
	}
	sort.Slice(r.res.Shredded, func(i, k int) bool { return r.res.Shredded[i].Seq < r.res.Shredded[k].Seq })
	w, err := s.st.Keys.Wrapper(r.j.To)
	if err != nil {
		return fmt.Errorf("rotate keys: %w", err)
	}
	per := r.per
	if per <= 0 {
		per = DefaultRekeyKeysPerEvent
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
		s.notifyAppend() // the mirror loop uploads rekey events like any other
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
	s := r.s
	// Projections: deleted here, rebuilt from the live log once the old
	// epoch is gone (run), so no projection file ever held shredded text
	// after the rotation, whatever compaction each one does.
	if err := s.closeSetLocked(); err != nil {
		return fmt.Errorf("rotate keys: close projections: %w", err)
	}
	if err := os.RemoveAll(s.st.Path(store.ProjectionsDir)); err != nil {
		return fmt.Errorf("rotate keys: remove projections: %w", err)
	}
	r.point()
	// Snapshots: every local one predates the rotation, is sealed under an
	// epoch being wiped and may hold tombstoned content. Deleted.
	snaps := s.st.Path(store.SnapshotsDir)
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
	if s.cache != nil {
		if err := s.cache.Close(); err != nil {
			return fmt.Errorf("rotate keys: close embedding cache: %w", err)
		}
		s.cache, s.popts = nil, nil
	}
	live := r.liveContent
	dropped, err := vector.KeepOnly(s.st.Path("embed-cache.db"), func(h [32]byte) bool { return live[h] })
	if err != nil {
		return fmt.Errorf("rotate keys: %w", err)
	}
	r.res.EmbedCacheDropped = dropped
	r.point()
	// corrupt/: bytes cut from torn log tails, events sealed under DEKs
	// wrapped under old epochs. Never acknowledged, and after the wipe
	// unreadable: deleted, so nothing sealed under the shredded epoch stays.
	cdir := s.st.Path("corrupt")
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

// shredCut returns the seq before which every tombstone is shredded: the
// first rekey event of the newest completed rotation (one whose old epoch
// the keyring no longer holds), 0 when no rotation completed. A rotation
// rewraps every event up to its first rekey event except tombstoned
// content, so a tombstone before that point had its targets shredded.
func (s *Store) shredCut(ctx context.Context) (uint64, error) {
	kr := s.st.Keys
	if kr == nil {
		return 0, nil
	}
	first := map[uint32]uint64{}
	err := s.st.Log.ForEachHeader(ctx, 0, 0, func(h *log.Header) error {
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

// sameFile reports whether two paths name the same existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// saveKeys replaces the store's key file with kr, then overwrites the
// replaced file's bytes through a descriptor opened before the rename, so
// the old keys do not linger in its freed blocks (on file systems that
// write in place; copy-on-write ones and SSD remapping keep no promise).
// The new file is in place before anything is overwritten: a crash
// between the two loses nothing.
func saveKeys(kr *crypto.Keyring, path string) error {
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
