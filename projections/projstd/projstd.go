// Package projstd assembles ucl's standard projection set — timelines,
// full-text, L0 summaries, vectors and the near-duplicate hashes — in one directory, one subdirectory
// per projection, driven by one projector. The CLI, snapshots and the
// Arweave rebuild all open projections through it, so every path builds the
// same set with the same options and reaches the same digests.
//
// # Self-healing
//
// Projections are derived from the log, so a damaged one is never fatal:
//
//   - Open opens each projection under projections.Guard (panics and memory
//     faults on mapped files become errors) and runs its cheap open-time
//     checks (bbolt files not truncated, meta and checkpoint readable, the
//     bleve index opens and answers). A projection that fails (truncated,
//     zeroed or garbage files, a corrupt index, a panic) or whose directory
//     carries the projections.DamageMarker flag is deleted and recreated
//     empty; the next catch-up rebuilds it from the log. Errors that say
//     nothing about the files' content (a lock held by another process,
//     permission denied, disk full) are returned as they are.
//   - CatchUp does the same for a projection that reports damage while it
//     applies events (a *projections.DamagedError, or a decode error of its
//     stored records), then catches up again.
//   - Reads that find damage (query's check of results against the log)
//     call MarkDamaged; Heal resets the flagged projection at once.
//
// Every reset is reported once, through TakeNotices or the OnNotice
// callback, for the front end to print (stderr); nothing is printed by the
// library.
//
// Open also removes leftovers of an interrupted write inside the
// projection directories (".NAME.tmp-*" files of fsutil.WriteAtomic,
// "*.compact" files of projections.CompactBolt).
//
// # Digest cache
//
// The set's directory holds digests.json (DigestCacheFile), the
// projector's digest cache (projections.Options.DigestCache, format in
// projections/digestcache.go): each projection's last computed digest
// with the checkpoint, versions and digest key it was computed at.
// Projector.StatusCached (the engine's status report) reads a digest from
// it when that key is still the projection's, so a status costs reading
// checkpoints rather than a pass over every projection; Status (snapshots),
// Digests and Verify always compute. Since a status no longer reads the
// vector graph whole, it no longer notices damage to it: Verify does, and
// a search that meets it marks it. The file is derived: deleting it costs
// one full status.
package projstd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/dedup"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/summary"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// Options configure the set.
type Options struct {
	// Only restricts the set to these projection names (nil: all). Used by
	// tests and benchmarks that measure one projection.
	Only []string
	// Vectors configures the vector projection (embedder, index choice).
	Vectors VectorOptions
	// Projector options (commit interval, temp dir for verify).
	Projector projections.Options
}

// Set is an open projection set.
type Set struct {
	Dir       string
	Projector *projections.Projector
	Timelines *timelines.Timelines
	FTS       *fts.Index
	Summary   *summary.Index
	Vectors   *VectorProjection
	Dedup     *dedup.Index

	o        Options
	src      projections.Source
	mu       sync.Mutex
	notices  []Notice
	onNotice func(Notice)
}

// Notice reports a projection the set reset on its own because its stored
// state was damaged. The log is untouched; the projection is rebuilt from
// it by the next catch-up (CatchUp and Heal do it at once).
type Notice struct {
	Projection string `json:"projection"`
	Reason     string `json:"reason"`
}

func (n Notice) String() string {
	return fmt.Sprintf("projection %s was damaged (%s); it was reset and is rebuilt from the log", n.Projection, n.Reason)
}

// DigestCacheFile, in the set's directory, is the projector's digest
// cache (projections.Options.DigestCache): `project status` reads digests
// from it instead of computing them when nothing changed since.
const DigestCacheFile = "digests.json"

// Names of the standard projections, in the order they are applied.
var Names = []string{"timelines", "fts", "summary", "vectors", "dedup"}

func wanted(only []string, name string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if o == name {
			return true
		}
	}
	return false
}

// resettable reports whether an open failure is about the files' content
// (reset and rebuild) rather than the environment (report as is).
func resettable(err error) bool {
	for _, e := range []error{bolt.ErrTimeout, os.ErrPermission, syscall.ENOSPC, syscall.EROFS, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, context.Canceled} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// openOne opens one projection in dir with open, resetting the directory
// when it is flagged damaged or fails to open (see the package doc).
func openOne[T projections.Projection](name, dir string, open func() (T, error), notify func(Notice)) (T, error) {
	var p, zero T
	try := func() error {
		return projections.Guard(name, func() error {
			var err error
			p, err = open()
			return err
		})
	}
	reason, marked := projections.MarkedDamaged(dir)
	if !marked {
		err := try()
		if err == nil {
			return p, nil
		}
		if !resettable(err) {
			return zero, err
		}
		reason = err.Error()
	}
	if err := os.RemoveAll(dir); err != nil {
		return zero, fmt.Errorf("reset damaged projection %s: %w", name, err)
	}
	notify(Notice{Projection: name, Reason: reason})
	if err := try(); err != nil {
		return zero, fmt.Errorf("reopen projection %s after reset: %w", name, err)
	}
	return p, nil
}

// removeLeftovers deletes the temp files an interrupted atomic write or
// compaction left under dir.
func removeLeftovers(dir string) {
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		n := d.Name()
		if (strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-")) || strings.HasSuffix(n, ".compact") {
			os.Remove(path)
		}
		return nil
	})
}

// openNamed opens one projection of the set in dir and stores it in s.
func (s *Set) openNamed(name string, o Options, notify func(Notice)) (projections.Projection, error) {
	sub := filepath.Join(s.Dir, name)
	var err error
	switch name {
	case "timelines":
		if s.Timelines, err = openOne(name, sub, func() (*timelines.Timelines, error) { return timelines.Open(sub, s.events()) }, notify); err == nil {
			return s.Timelines, nil
		}
	case "fts":
		if s.FTS, err = openOne(name, sub, func() (*fts.Index, error) { return fts.Open(sub) }, notify); err == nil {
			return s.FTS, nil
		}
	case "summary":
		if s.Summary, err = openOne(name, sub, func() (*summary.Index, error) { return summary.Open(sub, s.events()) }, notify); err == nil {
			return s.Summary, nil
		}
	case "vectors":
		if s.Vectors, err = openOne(name, sub, func() (*VectorProjection, error) { return OpenVectors(sub, o.Vectors) }, notify); err == nil {
			return s.Vectors, nil
		}
	case "dedup":
		if s.Dedup, err = openOne(name, sub, func() (*dedup.Index, error) { return dedup.Open(sub) }, notify); err == nil {
			return s.Dedup, nil
		}
	default:
		return nil, fmt.Errorf("open %q: %w", name, projections.ErrUnknownProjection)
	}
	return nil, fmt.Errorf("open %s: %w", name, err)
}

// events is where the timelines read chunk content back: the source,
// when it reads events by seq (the log, a snapshot's pinned log, the
// shared area all do).
func (s *Set) events() projections.EventReader {
	r, _ := s.src.(projections.EventReader)
	return r
}

// build opens the projections (not the projector) in dir, fed by src.
func build(dir string, src projections.Source, o Options, notify func(Notice)) (*Set, []projections.Projection, error) {
	s := &Set{Dir: dir, o: o, src: src}
	var ps []projections.Projection
	fail := func(err error) (*Set, []projections.Projection, error) {
		for _, p := range ps {
			p.Close()
		}
		return nil, nil, err
	}
	if err := fsutil.MkdirAllSync(dir, 0o700); err != nil {
		return fail(err)
	}
	removeLeftovers(dir)
	for _, name := range Names {
		if !wanted(o.Only, name) {
			continue
		}
		p, err := s.openNamed(name, o, notify)
		if err != nil {
			return fail(err)
		}
		ps = append(ps, p)
	}
	return s, ps, nil
}

// Open opens the set in dir, fed by src. It does not catch up: call
// CatchUp (or Projector.CatchUp with progress). Projections found damaged
// are reset (see the package doc and TakeNotices).
func Open(dir string, src projections.Source, o Options) (*Set, error) {
	var notices []Notice
	s, ps, err := build(dir, src, o, func(n Notice) { notices = append(notices, n) })
	if err != nil {
		return nil, err
	}
	s.notices = notices
	po := o.Projector
	if po.DigestCache == "" {
		po.DigestCache = filepath.Join(dir, DigestCacheFile)
	}
	if s.Projector, err = projections.NewProjector(src, ps, po); err != nil {
		for _, p := range ps {
			p.Close()
		}
		return nil, err
	}
	return s, nil
}

// Builder returns a constructor of fresh projections fed by src, for
// Projector.Verify.
func Builder(src projections.Source, o Options) func(dir string) ([]projections.Projection, error) {
	return func(dir string) ([]projections.Projection, error) {
		_, ps, err := build(dir, src, o, func(Notice) {})
		return ps, err
	}
}

// TakeNotices returns the resets done since the last call (each is
// reported once).
func (s *Set) TakeNotices() []Notice {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.notices
	s.notices = nil
	return out
}

func (s *Set) notify(n Notice) {
	s.mu.Lock()
	fn := s.onNotice
	if fn == nil {
		s.notices = append(s.notices, n)
	}
	s.mu.Unlock()
	if fn != nil {
		fn(n)
	}
}

// MarkDamaged flags projection name for a reset: the next Open (or Heal)
// deletes its state and rebuilds it from the log.
func (s *Set) MarkDamaged(name, reason string) error {
	if !wanted(Names, name) {
		return fmt.Errorf("mark %q damaged: %w", name, projections.ErrUnknownProjection)
	}
	return projections.MarkDamaged(filepath.Join(s.Dir, name), reason)
}

// reset closes projection name, deletes its state, reopens it empty and
// puts it back into the projector.
func (s *Set) reset(name, reason string) error {
	p, ok := s.Projector.Projection(name)
	if !ok {
		return fmt.Errorf("reset %q: %w", name, projections.ErrUnknownProjection)
	}
	projections.Guard(name, p.Close) // a damaged projection may fail to close: it is deleted anyway
	sub := filepath.Join(s.Dir, name)
	if err := projections.MarkDamaged(sub, reason); err != nil {
		return err
	}
	np, err := s.openNamed(name, s.o, s.notify)
	if err != nil {
		return err
	}
	return s.Projector.Replace(np)
}

// damaged returns the projection an error from a catch-up blames for
// damage to its own files, if any.
func damaged(err error) (string, bool) {
	if name, ok := projections.Damaged(err); ok {
		return name, true
	}
	name := corrupt(err)
	var ae *projections.ApplyError
	if name != "" && errors.As(err, &ae) {
		name = ae.Projection
	}
	return name, name != ""
}

// corrupt names the projection whose stored state err says does not
// decode ("" when err says nothing of the kind): each projection returns
// its own sentinel for a record of its files that fails its checks.
func corrupt(err error) string {
	switch {
	case errors.Is(err, timelines.ErrCorrupt):
		return timelines.Name
	case errors.Is(err, fts.ErrCorrupt), errors.Is(err, fts.ErrIndexMismatch):
		return fts.Name
	case errors.Is(err, summary.ErrCorrupt):
		return summary.Name
	case errors.Is(err, dedup.ErrCorrupt):
		return dedup.Name
	case errors.Is(err, errVectorsCorrupt):
		return "vectors"
	}
	return ""
}

// AsDamage returns err as a *projections.DamagedError when it says that a
// projection's stored state could not be read: already one (a panic, a
// file the projection refused), or an error wrapping a projection's
// corrupt-record sentinel. Anything else (a bad request, a missing id, a
// cancelled context, the log's own errors) is returned as it is: only
// damage makes a reader reset a projection and rebuild it from the log.
func AsDamage(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := projections.Damaged(err); ok {
		return err
	}
	if name, ok := damaged(err); ok {
		return &projections.DamagedError{Projection: name, Err: err}
	}
	return err
}

// CatchUp brings every projection to the source's head. A projection that
// turns out damaged on the way is reset and caught up from scratch (once
// per projection), with a notice.
func (s *Set) CatchUp(ctx context.Context, progress func(done, total uint64)) error {
	tried := map[string]bool{}
	for {
		err := s.Projector.CatchUp(ctx, progress)
		name, ok := damaged(err)
		if !ok || tried[name] {
			return err
		}
		tried[name] = true
		if rerr := s.reset(name, err.Error()); rerr != nil {
			return fmt.Errorf("%w (and its reset failed: %v)", err, rerr)
		}
	}
}

// Heal resets every projection flagged with MarkDamaged and catches the
// set up. It returns true when it reset something (see TakeNotices).
func (s *Set) Heal(ctx context.Context, progress func(done, total uint64)) (bool, error) {
	healed := false
	for _, p := range s.Projector.Projections() {
		sub := filepath.Join(s.Dir, p.Name())
		if reason, ok := projections.MarkedDamaged(sub); ok {
			if err := s.reset(p.Name(), reason); err != nil {
				return healed, err
			}
			healed = true
		}
	}
	if !healed {
		return false, nil
	}
	return true, s.CatchUp(ctx, progress)
}

// Close closes every projection.
func (s *Set) Close() error { return s.Projector.Close() }

// OnNotice makes the set hand every notice to fn as it happens (those
// already pending first) instead of keeping them for TakeNotices. Front
// ends print them (stderr).
func (s *Set) OnNotice(fn func(Notice)) {
	s.mu.Lock()
	pending := s.notices
	s.notices = nil
	s.onNotice = fn
	s.mu.Unlock()
	for _, n := range pending {
		fn(n)
	}
}

// FlagDamaged is MarkDamaged for callbacks (query.Sources.OnDamaged): a
// failure to write the flag becomes a notice instead of being lost.
func (s *Set) FlagDamaged(name, reason string) {
	if err := s.MarkDamaged(name, reason); err != nil {
		s.notify(Notice{Projection: name, Reason: reason + "; flagging it for a rebuild failed: " + err.Error() + "; run a rebuild of it"})
	}
}

// Verify is `project verify`: it catches the set up (resetting damaged
// projections as CatchUp does, with notices), then rebuilds every
// projection from the log in a temporary directory (Options.Projector.
// TempDir) and compares digests, which cover what reads use (see each
// projection's package doc). It returns the mismatches, sorted by name.
func (s *Set) Verify(ctx context.Context, progress func(done, total uint64)) ([]projections.Mismatch, error) {
	if err := s.CatchUp(ctx, nil); err != nil {
		return nil, err
	}
	mm, err := s.Projector.Verify(ctx, Builder(s.src, s.o), progress)
	if name, ok := damaged(err); ok {
		// A projection that cannot even be read is reset and rebuilt
		// from the log, as a catch-up does, then compared again.
		reason := fmt.Sprintf("reading it failed: %v", err)
		s.notify(Notice{Projection: name, Reason: reason + "; rebuilt from the log"})
		if rerr := s.reset(name, reason); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		if err := s.CatchUp(ctx, nil); err != nil {
			return nil, err
		}
		return s.Projector.Verify(ctx, Builder(s.src, s.o), progress)
	}
	return mm, err
}
