package ucl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/proof"
	"github.com/unlimitedcontext/ucl/query"
	"github.com/unlimitedcontext/ucl/share"
)

// Store is an open ucl store: the log, its keys and wallet, the projection
// set (opened on first use and kept caught up), the query engine, the
// embedder and its cache, the mirror state and the snapshots. It owns
// every resource it opens and Close releases all of them. A Store is safe
// for concurrent use: reads (Search, Context, Session, Sessions, Get) of
// projections already at the log head run side by side; catching up,
// healing, rebuilding and restoring run one at a time, alone.
type Store struct {
	st     *store.Store
	opts   Options
	keyErr error // why the vault key could not be loaded (nil: loaded)

	// projMu guards set, popts, cache and the projections' state. Reads
	// of a set already at the log head hold it shared (see readProj);
	// everything that changes the set (catch-up, heal, rebuild, restore,
	// close) holds it exclusively (lockProj).
	projMu sync.RWMutex
	// caughtTo is the log head the set was last caught up to, valid while
	// set == caughtSet; any exclusive section invalidates it (lockProj)
	// until caughtUpLocked proves it again.
	caughtTo  uint64
	caughtSet *projstd.Set
	set       *projstd.Set
	vecFrom   uint64 // the vector projection's checkpoint when the set opened
	popts     *projstd.Options
	cache     *vector.BoltCache
	// dedupSet holds the dedup projection alone while the full set is not
	// open: a store checks for duplicates without opening (and loading)
	// every projection. setLocked closes it before opening the set.
	dedupSet *projstd.Set
	// dedupMu makes a store's duplicate check and its append one step.
	dedupMu sync.Mutex
	// consolidateMu runs one consolidation at a time (consolidate_engine.go).
	consolidateMu sync.Mutex
	// sharedMu guards shared and sharedSrc, the projections of what other
	// wallets shared with this store (shareapi.go, package share), opened
	// on first use, and every call on them; taken after projMu (shared or
	// not).
	sharedMu  sync.Mutex
	shared    *projstd.Set
	sharedSrc *share.Source
	mirror    sync.Mutex   // one push at a time
	tree      proof.Merkle // the Merkle tree, opened on first use
	closeMu   sync.Mutex
	closed    bool
	// shut is set by Close before it waits for projMu: a read still in
	// flight then opens no projection set (one opened after Close would
	// stay open, its bolt files locked, and the next Open of the store in
	// this process would wait on their locks forever).
	shut atomic.Bool
	// appended is signalled (non-blocking) after every append, waking the
	// mirror loop.
	appended chan struct{}
}

// Init creates a store in dir (which may exist but must not hold a store)
// and opens it.
func Init(dir string, o InitOptions) (*Store, error) {
	s, err := store.Init(dir, store.InitOptions{Keys: o.Keys, Wallet: o.Wallet, Durability: o.Durability})
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	opts := o.Options
	if opts.Keys == nil {
		opts.Keys = o.Keys
	}
	return Open(dir, opts)
}

// Open opens the store in dir. It takes the store's lock: a second Open
// of the same store, in this or another process, fails with
// log.ErrLocked (use the owner's socket instead, see Dial). A store
// without its vault key opens for raw reads and verification; methods
// that need the key then return the error loading it gave.
func Open(dir string, o Options) (*Store, error) {
	o.Embedder = o.Embedder.withDefaults()
	if o.Warn == nil {
		o.Warn = func(msg string) { fmt.Fprintln(os.Stderr, "ucl: warning: "+msg) }
	}
	switch o.Embedder.Kind {
	case EmbedderHash, EmbedderStatic, EmbedderOllama, EmbedderOpenAI:
	default:
		return nil, fmt.Errorf("open store: embedder %q: %w", o.Embedder.Kind, ErrUnknownEmbedder)
	}
	if o.Embedder.Kind == EmbedderStatic && o.Embedder.Model == "" {
		return nil, fmt.Errorf("open store: the static embedder needs its model directory: %w", ErrEmbedderConfig)
	}
	if o.Embedder.Kind != EmbedderHash && o.Embedder.Kind != EmbedderStatic && (o.Embedder.URL == "" || o.Embedder.Model == "") {
		return nil, fmt.Errorf("open store: the %s embedder: %w", o.Embedder.Kind, ErrEmbedderConfig)
	}
	// An absolute directory: attached commands see the owner's paths.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	so := store.OpenOptions{Keys: o.Keys, VaultKeyPath: o.VaultKeyPath, Durability: o.Durability, Passphrase: o.Passphrase,
		Replicate: o.Replicate}
	st, err := store.Open(dir, so)
	var keyErr error
	if err != nil {
		// Without an explicit key and without DIR/vault.key, open for raw
		// reads (auditors); remember why, for the methods that need keys.
		_, statErr := os.Stat(filepath.Join(dir, store.VaultFile))
		if o.Keys != nil || o.VaultKeyPath != "" || !os.IsNotExist(statErr) {
			return nil, err
		}
		if _, merr := store.ReadMeta(dir); merr != nil {
			return nil, merr
		}
		keyErr = err
		so.NoKeys = true
		if st, err = store.Open(dir, so); err != nil {
			return nil, err
		}
	}
	if len(st.Tidied) > 0 {
		o.Warn(fmt.Sprintf("removed %d staging leftovers of an interrupted operation: %s", len(st.Tidied), strings.Join(st.Tidied, ", ")))
	}
	if st.TidyErr != nil {
		o.Warn(fmt.Sprintf("could not remove staging leftovers of an interrupted operation: %v", st.TidyErr))
	}
	s := &Store{st: st, opts: o, keyErr: keyErr, appended: make(chan struct{}, 1)}
	if keyErr == nil {
		// A key rotation a crash interrupted is finished (or, if it never
		// switched epochs, rolled back) before anything else runs. If that
		// fails the store still opens: it is consistent at every phase, and
		// the next Open or RotateKeys tries again.
		switch res, err := s.resumeRotation(context.Background()); {
		case err != nil:
			o.Warn(fmt.Sprintf("an interrupted vault-key rotation could not be finished: %v", err))
		case res != nil && res.RolledBack:
			o.Warn(fmt.Sprintf("rolled back an interrupted vault-key rotation (epoch %d stays current)", res.FromEpoch))
		case res != nil:
			o.Warn(fmt.Sprintf("finished an interrupted vault-key rotation: epoch %d is wiped, epoch %d is current (export a new recovery code)", res.FromEpoch, res.ToEpoch))
		}
	}
	return s, nil
}

// Close closes the projections, the embed cache and the log.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.shut.Store(true)
	s.lockProj()
	defer s.projMu.Unlock()
	s.sharedMu.Lock()
	defer s.sharedMu.Unlock()
	err := errors.Join(s.closeSetLocked(), s.closeSharedLocked(), s.tree.Close())
	if s.cache != nil {
		err = errors.Join(err, s.cache.Close())
		s.cache = nil
	}
	return errors.Join(err, s.st.Close())
}

// Dir returns the store directory.
func (s *Store) Dir() string { return s.st.Dir }

// Log returns the store's log, for tools (benchmarks, tests) that read it
// directly. Appending through it bypasses the engine's bookkeeping.
func (s *Store) Log() *log.Log { return s.st.Log }

// needKeys returns the error of loading the vault key, if it failed.
func (s *Store) needKeys() error {
	if s.keyErr != nil {
		return s.keyErr
	}
	if s.st.Keys == nil {
		return log.ErrNoKeys
	}
	return nil
}

func (s *Store) notifyAppend() {
	select {
	case s.appended <- struct{}{}:
	default:
	}
}

// projOptionsLocked builds (once) the projection options: the embedder
// and its cache, which the Store keeps until Close.
func (s *Store) projOptionsLocked() (projstd.Options, error) {
	if s.popts != nil {
		return *s.popts, nil
	}
	var o projstd.Options
	e := s.opts.Embedder
	if e.Kind == EmbedderStatic {
		se, err := vector.LoadStatic(e.Model)
		if err != nil {
			return o, fmt.Errorf("load static embedder: %w", err)
		}
		o.Vectors.Embedder = se
	} else if e.Kind != EmbedderHash {
		proto := vector.ProtocolOllama
		if e.Kind == EmbedderOpenAI {
			proto = vector.ProtocolOpenAI
		}
		ho := vector.HTTPOptions{Protocol: proto, BaseURL: e.URL, Model: e.Model, Dim: e.Dim, Timeout: e.Timeout}
		if ho.Dim == 0 {
			d, err := s.embedderDim(ho)
			if err != nil {
				return o, fmt.Errorf("probe embedding model: %w", err)
			}
			ho.Dim = d
		}
		h, err := vector.NewHTTPEmbedder(ho)
		if err != nil {
			return o, err
		}
		cache, err := vector.OpenBoltCache(s.st.Path("embed-cache.db"))
		if err != nil {
			return o, fmt.Errorf("open embed cache: %w", err)
		}
		s.cache = cache
		o.Vectors.Embedder = vector.NewCachedEmbedder(h, cache)
	}
	o.Projector.TempDir = s.st.Dir
	s.popts = &o
	return o, nil
}

// embedderDim returns the dimension of an HTTP embedding model: remembered
// in DIR/embedder.json per protocol and model, else asked of the server
// once (a one-text probe) and remembered.
func (s *Store) embedderDim(ho vector.HTTPOptions) (int, error) {
	key := fmt.Sprintf("%s/%s", ho.Protocol, ho.Model)
	path := s.st.Path("embedder.json")
	known := map[string]int{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &known); err != nil {
			known = map[string]int{} // a damaged file is re-probed and rewritten
		}
	}
	if d := known[key]; d > 0 {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := vector.DetectDim(ctx, ho)
	if err != nil {
		return 0, err
	}
	known[key] = d
	b, err := json.MarshalIndent(known, "", "  ")
	if err != nil {
		return 0, err
	}
	return d, fsutil.WriteFileAtomic(path, b, 0o600)
}

// setLocked opens the projection set if it is not open.
func (s *Store) setLocked() (*projstd.Set, error) {
	if s.set != nil {
		return s.set, nil
	}
	if s.shut.Load() {
		return nil, log.ErrClosed
	}
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	if err := s.closeDedupSetLocked(); err != nil {
		return nil, err
	}
	o, err := s.projOptionsLocked()
	if err != nil {
		return nil, err
	}
	set, err := projstd.Open(s.st.Path(store.ProjectionsDir), s.st.Log, o)
	if err != nil {
		return nil, err
	}
	set.OnNotice(func(n projstd.Notice) { s.opts.Warn(n.String()) })
	s.set, s.vecFrom = set, 0
	if set.Vectors != nil {
		cp, err := set.Vectors.Checkpoint()
		if err != nil {
			set.Close()
			s.set = nil
			return nil, err
		}
		s.vecFrom = cp.Seq
	}
	return set, nil
}

// flushVectorsAfter is how many events a Store must have projected into the
// vectors before Close writes the vector graph down. Opening the vector
// projection replays every operation since its graph file into the HNSW
// graph (about 150 µs each here), so after a bulk catch-up the next
// process would pay seconds to open; writing the graph costs one file
// write instead. Small catch-ups leave it to the projection's own schedule.
const flushVectorsAfter = 1000

func (s *Store) closeDedupSetLocked() error {
	if s.dedupSet == nil {
		return nil
	}
	err := s.dedupSet.Close()
	s.dedupSet = nil
	return err
}

func (s *Store) closeSetLocked() error {
	if err := s.closeDedupSetLocked(); err != nil {
		return err
	}
	if s.set == nil {
		return nil
	}
	var err error
	if v := s.set.Vectors; v != nil {
		if cp, cerr := v.Checkpoint(); cerr == nil && cp.Seq >= s.vecFrom+flushVectorsAfter {
			err = v.Flush()
		}
	}
	err = errors.Join(err, s.set.Close())
	s.set = nil
	return err
}

// caughtUpLocked opens the set and brings it to the log head.
func (s *Store) caughtUpLocked(ctx context.Context, p Progress) (*projstd.Set, error) {
	set, err := s.setLocked()
	if err != nil {
		return nil, err
	}
	// The head before the catch-up: events appended while it runs are not
	// in the set, and the next read catches them up.
	head, _ := s.st.Log.Head()
	if err := set.CatchUp(ctx, p.stage("project")); err != nil {
		return nil, fmt.Errorf("catch up projections: %w", err)
	}
	s.caughtTo, s.caughtSet = head, set
	return set, nil
}

// lockProj takes projMu exclusively. Whatever the section does to the
// set, the shared fast path must not trust the old catch-up afterwards.
func (s *Store) lockProj() {
	s.projMu.Lock()
	s.caughtSet = nil
}

// readProj runs fn on a set at the log head (as of the call). When the
// set is already there, fn runs under the shared lock, beside other
// readers; otherwise the exclusive lock is taken, the set caught up and fn
// runs under it. fn must only read the set. exclusive tells fn which lock
// it holds (a reader that finds damage heals only under the exclusive
// one).
func (s *Store) readProj(ctx context.Context, p Progress, fn func(set *projstd.Set, exclusive bool) error) error {
	err := s.readProjOnce(ctx, p, fn)
	name, ok := projections.Damaged(err)
	if !ok {
		return err
	}
	// A read that panicked on a projection's files (bit flips a file
	// format does not check): flag it (every one when the panic names
	// none), rebuild it from the log, and read once more.
	s.lockProj()
	if set := s.set; set != nil {
		for _, n := range projstd.Names {
			if name == "" || n == name {
				set.FlagDamaged(n, err.Error())
			}
		}
		if _, herr := set.Heal(ctx, nil); herr != nil {
			s.projMu.Unlock()
			return errors.Join(err, herr)
		}
	}
	s.projMu.Unlock()
	return s.readProjOnce(ctx, p, fn)
}

// readProjOnce is readProj without the retry; a panic in fn is a
// *projections.DamagedError naming the projection whose code panicked
// ("" when the stack names none).
func (s *Store) readProjOnce(ctx context.Context, p Progress, fn func(set *projstd.Set, exclusive bool) error) error {
	fn0 := fn
	fn = func(set *projstd.Set, exclusive bool) error {
		return guardRead(func() error { return fn0(set, exclusive) })
	}
	s.projMu.RLock()
	if set := s.set; set != nil && set == s.caughtSet {
		if head, _ := s.st.Log.Head(); head == s.caughtTo {
			err := fn(set, false)
			s.projMu.RUnlock()
			return err
		}
	}
	s.projMu.RUnlock()
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, p)
	if err != nil {
		return err
	}
	return fn(set, true)
}

// guardRead runs a projection read and turns a panic (or a memory fault
// on a mapped file) into a *projections.DamagedError naming the projection
// whose package is on the panicking stack (bleve's is the full-text
// index's). A returned error that says a projection's files did not read
// (projstd.AsDamage: its corrupt-record sentinel, an error of bleve's) is
// one too; any other error (a bad request, a missing id, the log's) is
// returned as it is.
func guardRead(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r == nil {
			err = projstd.AsDamage(err)
		} else {
			st := string(debug.Stack())
			name := ""
			for _, n := range projstd.Names {
				if strings.Contains(st, "/projections/"+n+".") {
					name = n
					break
				}
			}
			if name == "" && strings.Contains(st, "github.com/blevesearch/") {
				name = "fts"
			}
			err = &projections.DamagedError{Projection: name, Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	return fn()
}

// The query engine drops ANN hits outside a session filter by the vector
// projection's own knowledge, without chunk lookups.
var _ query.ChunkSessioner = (*projstd.VectorProjection)(nil)

// The query engine gates a lexical embedder's scores (query.Options.ANNGate).
var _ query.LexicalVectors = (*projstd.VectorProjection)(nil)

// engine returns a query engine over set.
func (s *Store) engine(set *projstd.Set) *query.Engine {
	src := query.Sources{Chunks: set.Timelines, Log: s.st.Log, OnDamaged: set.FlagDamaged}
	if set.FTS != nil {
		src.Text = set.FTS
	}
	if set.Vectors != nil {
		src.Vectors = set.Vectors
	}
	if set.Summary != nil {
		src.Sessions = set.Summary
	}
	return query.New(src, query.Options{})
}

// adviseReads advises the projections' mappings for a one-shot reader
// (Options.RandomReads; adviseOneShot) once the set is open and before it
// is read.
func (s *Store) adviseReads() {
	if !s.opts.RandomReads {
		return
	}
	if err := adviseOneShot(s.st.Path(store.ProjectionsDir)); err != nil {
		s.opts.Warn(err.Error()) // advice: the read runs either way
	}
}

// query runs fn on a query engine over the caught-up set, beside other
// readers when the set is at the head (readProj). When the results fail
// their check against the log (the projection is damaged), the damaged
// projection is rebuilt from the log under the exclusive lock and fn runs
// once more on the rebuilt state.
func (s *Store) query(ctx context.Context, p Progress, fn func(e *query.Engine) error) error {
	var found error // damage found by a shared reader
	err := s.readProj(ctx, p, func(set *projstd.Set, exclusive bool) error {
		// Only the last run counts: readProj reruns fn after it healed
		// damage the first run found.
		found = nil
		s.adviseReads()
		err := projstd.AsDamage(fn(s.engine(set)))
		if _, damaged := projections.Damaged(err); damaged {
			if exclusive {
				return s.healLocked(ctx, p, set, err, fn)
			}
			found = err
		}
		return err
	})
	if found == nil {
		return err
	}
	// Heal under the exclusive lock. Another caller may have healed the
	// set meanwhile: then nothing is flagged and the first error stands,
	// as when one lock serialised everything.
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, p)
	if err != nil {
		return err
	}
	return s.healLocked(ctx, p, set, found, fn)
}

// healLocked rebuilds the projections flagged damaged and runs fn again;
// err is what fn returned the first time.
func (s *Store) healLocked(ctx context.Context, p Progress, set *projstd.Set, err error, fn func(e *query.Engine) error) error {
	healed, herr := set.Heal(ctx, p.stage("project"))
	if herr != nil {
		return fmt.Errorf("%w (and rebuilding it failed: %v)", err, herr)
	}
	if !healed {
		return err
	}
	set, cerr := s.caughtUpLocked(ctx, p)
	if cerr != nil {
		return cerr
	}
	return fn(s.engine(set))
}

// Progress reports a long step: stage names what runs ("append",
// "project", "verify", "rebuild", "sync", "archive", ...); total 0 means
// unknown. It never crosses the socket.
type Progress func(stage string, done, total uint64)

func (p Progress) stage(name string) func(done, total uint64) {
	if p == nil {
		return nil
	}
	return func(done, total uint64) { p(name, done, total) }
}
