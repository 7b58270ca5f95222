package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// ErrNoSnapshot is returned by FetchSnapshot when the object store holds
// no snapshot of the log.
var ErrNoSnapshot = errors.New("cluster: no snapshot in the object store")

// manifestObject and archiveObject name a log's objects in
// SnapshotsBucket (package doc).
func manifestObject(logID string) string { return logID + "/manifest" }

func archiveObject(logID, name string) string { return logID + "/archive/" + name }

// PutSnapshot puts the local snapshot in dir (a snapshot.CreateResult's
// Dir) into the object store as the newest of log logID: the archive
// first, then the manifest that names it, so a reader never finds a
// manifest without its archive; the archive it replaces is deleted last.
// When only that deletion fails, it returns the manifest with the error:
// the snapshot is the newest in the object store.
func (n *Node) PutSnapshot(logID, dir string) (*snapshot.Manifest, error) {
	man, err := os.ReadFile(filepath.Join(dir, snapshot.ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("put snapshot: %w", err)
	}
	m, err := snapshot.ParseManifest(man)
	if err != nil {
		return nil, fmt.Errorf("put snapshot: %w", err)
	}
	if m.LogID != logID {
		return nil, fmt.Errorf("put snapshot %s: it is of log %s, not %s", m.Name, m.LogID, logID)
	}
	f, err := os.Open(filepath.Join(dir, snapshot.ArchiveFile))
	if err != nil {
		return nil, fmt.Errorf("put snapshot: %w", err)
	}
	defer f.Close()
	var old string
	if b, err := n.obs.GetBytes(manifestObject(logID)); err == nil {
		if om, err := snapshot.ParseManifest(b); err == nil && om.Name != m.Name {
			old = om.Name
		}
	}
	if _, err := n.obs.Put(&nats.ObjectMeta{Name: archiveObject(logID, m.Name)}, f); err != nil {
		return nil, fmt.Errorf("put snapshot %s: %w", m.Name, err)
	}
	if _, err := n.obs.PutBytes(manifestObject(logID), man); err != nil {
		return nil, fmt.Errorf("put snapshot %s: %w", m.Name, err)
	}
	if old != "" {
		// A reader that fetched the old manifest just before may miss its
		// archive now: it falls back to replaying the log, nothing worse.
		if err := n.obs.Delete(archiveObject(logID, old)); err != nil && !errors.Is(err, nats.ErrObjectNotFound) {
			return m, fmt.Errorf("put snapshot %s: delete the previous one: %w", m.Name, err)
		}
	}
	return m, nil
}

// FetchSnapshot returns the manifest and archive of the newest snapshot
// of log logID in the object store (ErrNoSnapshot: none). The archive is
// checked against the manifest by snapshot.Import, and the manifest
// against the log by snapshot.Restore.
func (n *Node) FetchSnapshot(logID string) (manifest, archive []byte, err error) {
	manifest, err = n.obs.GetBytes(manifestObject(logID))
	if errors.Is(err, nats.ErrObjectNotFound) {
		return nil, nil, fmt.Errorf("log %s: %w", logID, ErrNoSnapshot)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("fetch the snapshot manifest of log %s: %w", logID, err)
	}
	m, err := snapshot.ParseManifest(manifest)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch the snapshot of log %s: %w", logID, err)
	}
	archive, err = n.obs.GetBytes(archiveObject(logID, m.Name))
	if err != nil {
		return nil, nil, fmt.Errorf("fetch snapshot %s of log %s: %w", m.Name, logID, err)
	}
	return manifest, archive, nil
}

// SnapshotUse says whether a takeover restored the projections from the
// object store's snapshot.
type SnapshotUse struct {
	Used bool
	// Reason is why not (when !Used).
	Reason   string
	Name     string
	Seq      uint64
	Replayed uint64
}

// restoreSnapshot seeds the projections of s (in dir, of log logID, whose
// log was just imported whole from the stream) from the newest snapshot
// in the object store, replaying only the events after it. A snapshot
// that is missing or refused leaves the projections to be built from the
// log on first use, as without one.
func (n *Node) restoreSnapshot(ctx context.Context, s *ucl.Store, dir, logID string) SnapshotUse {
	man, arch, err := n.FetchSnapshot(logID)
	if err != nil {
		return SnapshotUse{Reason: err.Error()}
	}
	in, err := snapshot.Import(filepath.Join(dir, store.SnapshotsDir), man, arch)
	if err != nil {
		return SnapshotUse{Reason: err.Error()}
	}
	res, err := s.SnapshotRestore(ctx, ucl.SnapshotRestoreRequest{Name: in.Name, NoFallback: true})
	if err != nil {
		return SnapshotUse{Reason: err.Error(), Name: in.Name}
	}
	return SnapshotUse{Used: true, Name: res.Snapshot, Seq: res.Seq, Replayed: res.Replayed}
}

// snapshotter puts a snapshot in the object store whenever the replicate
// hook says SnapshotEvery events were appended since the last one. After
// each attempt it looks again rather than waiting for the hook: events
// appended during a snapshot may make the next one due already, and a
// failed one (a slow object store, a full disk) is tried again after a
// pause, doubling up to snapRetryMax, for as long as one is due — the
// hook, which signals only while events arrive, may not speak again.
func (o *Owned) snapshotter() {
	defer o.wg.Done()
	for {
		select {
		case <-o.stop:
			return
		case <-o.snapDue:
		}
		pause := snapRetryMin
		for o.snapshotDue() {
			select {
			case <-o.stop:
				return // Close waits for no further snapshot
			default:
			}
			m, err := o.PutSnapshot(context.Background())
			if err == nil {
				pause = snapRetryMin
				continue
			}
			if errors.Is(err, ErrLeaseLost) {
				return // the new owner snapshots from now on
			}
			if m != nil {
				// In the object store; only the archive it replaced is
				// left behind, for the next one to replace.
				if o.warn != nil {
					o.warn(fmt.Sprintf("store %s: snapshot for the cluster: %v", o.name, err))
				}
				continue
			}
			if o.warn != nil {
				o.warn(fmt.Sprintf("store %s: snapshot for the cluster (trying again in %v): %v", o.name, pause, err))
			}
			select {
			case <-o.stop:
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, snapRetryMax)
		}
	}
}

// The pauses between attempts at a snapshot that failed.
const (
	snapRetryMin = 500 * time.Millisecond
	snapRetryMax = 30 * time.Second
)

// snapshotDue reports whether the stream acknowledged SnapshotEvery
// events or more past the newest snapshot in the object store.
func (o *Owned) snapshotDue() bool {
	every := o.n.cfg.SnapshotEvery
	if every <= 0 {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.acked.Load() >= o.snapSeq+uint64(every)
}

// PutSnapshot snapshots the store's projections at its head and puts the
// snapshot in the object store as the newest, for a node that takes the
// store over with nothing local. The owner does this every
// Config.SnapshotEvery events; this does it now. As Node.PutSnapshot, a
// manifest with an error means the snapshot is in, the archive it
// replaced not deleted.
func (o *Owned) PutSnapshot(ctx context.Context) (*snapshot.Manifest, error) {
	if o.Lost() {
		return nil, ErrLeaseLost
	}
	res, err := o.Store.SnapshotCreate(ctx, ucl.SnapshotCreateRequest{})
	if err != nil {
		return nil, err
	}
	m, err := o.n.PutSnapshot(o.logID, res.Dir)
	if m != nil {
		// In the object store, even when deleting the archive it replaced
		// failed (err): the next one is due SnapshotEvery events after it.
		o.mu.Lock()
		o.snapSeq = max(o.snapSeq, m.Seq)
		o.mu.Unlock()
	}
	return m, err
}
