package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// Defaults of Config's zero fields.
const (
	DefaultReplicas = 3
	DefaultLeaseTTL = 10 * time.Second
	DefaultTimeout  = 10 * time.Second
	// DefaultSnapshotEvery is Config.SnapshotEvery's default.
	DefaultSnapshotEvery = 1000
	// OwnersBucket is the KV bucket of the leases.
	OwnersBucket = "ucl-owners"
	// SnapshotsBucket is the object store of the stores' newest snapshots.
	SnapshotsBucket = "ucl-snapshots"
	// importBatch is how many stream events one log.Import writes.
	importBatch = 1024
)

var (
	// ErrLeaseHeld is returned by Own when another node holds the lease.
	ErrLeaseHeld = errors.New("cluster: another node owns the store")
	// ErrLeaseLost is returned by appends after the owner failed to renew
	// its lease: another node may own the store now.
	ErrLeaseLost = errors.New("cluster: lease lost")
	// ErrForked is returned by Reconcile when the local log and the
	// stream hold different events at the same seq.
	ErrForked = errors.New("cluster: local log and stream differ")
	// ErrNoOwner is returned by a forwarded request when no node owns the
	// store (no responder on its subject).
	ErrNoOwner = errors.New("cluster: no node owns the store")
	// ErrCutOff is returned by Connected when this node has no connection
	// to NATS: it serves no store and takes no write until it has.
	ErrCutOff = errors.New("cluster: this node is cut off from NATS and takes no writes until it reconnects")
)

// Connected returns nil when the node's NATS connection is up, else
// ErrCutOff with the connection's state.
func (n *Node) Connected() error {
	if st := n.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("%w (connection %s)", ErrCutOff, st)
	}
	return nil
}

// Config configures Connect.
type Config struct {
	// URL is the NATS server (or comma-separated servers).
	URL string
	// NodeID names this node in leases (default: the NATS client name).
	NodeID string
	// Replicas of each store's stream and of the lease bucket.
	Replicas int
	// LeaseTTL is how long a lease lives without renewal.
	LeaseTTL time.Duration
	// Timeout bounds one publish, request or KV operation.
	Timeout time.Duration
	// SnapshotEvery: an owner puts a snapshot of a store's projections in
	// the object store each time this many events were appended since
	// the last one (0: DefaultSnapshotEvery; negative: never).
	SnapshotEvery int
}

// Node is one machine's connection to the cluster.
type Node struct {
	cfg Config
	nc  *nats.Conn
	js  nats.JetStreamContext
	kv  nats.KeyValue
	obs nats.ObjectStore
	ids nats.KeyValue // IdentityBucket
}

// Connect joins the cluster at cfg.URL, creating the lease bucket if it
// does not exist.
func Connect(cfg Config) (*Node, error) {
	if cfg.Replicas <= 0 {
		cfg.Replicas = DefaultReplicas
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = DefaultSnapshotEvery
	}
	if cfg.NodeID == "" {
		return nil, errors.New("cluster: Config.NodeID is required")
	}
	nc, err := nats.Connect(cfg.URL, nats.Name("ucl-"+cfg.NodeID), nats.Timeout(cfg.Timeout))
	if err != nil {
		return nil, fmt.Errorf("connect to NATS %s: %w", cfg.URL, err)
	}
	js, err := nc.JetStream(nats.MaxWait(cfg.Timeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to JetStream: %w", err)
	}
	kv, err := js.KeyValue(OwnersBucket)
	if errors.Is(err, nats.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(&nats.KeyValueConfig{Bucket: OwnersBucket, TTL: cfg.LeaseTTL,
			Replicas: cfg.Replicas, Storage: nats.FileStorage})
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("open the lease bucket: %w", err)
	}
	obs, err := js.ObjectStore(SnapshotsBucket)
	if errors.Is(err, nats.ErrStreamNotFound) || errors.Is(err, nats.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(&nats.ObjectStoreConfig{Bucket: SnapshotsBucket,
			Replicas: cfg.Replicas, Storage: nats.FileStorage})
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("open the snapshot bucket: %w", err)
	}
	n := &Node{cfg: cfg, nc: nc, js: js, kv: kv, obs: obs}
	if n.ids, err = n.identityKV(); err != nil {
		nc.Close()
		return nil, err
	}
	return n, nil
}

// Close leaves the cluster (stores owned through Own must be closed first).
func (n *Node) Close() { n.nc.Close() }

// ID is the node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// StreamName and Subject are the store's stream and subject (package doc).
func StreamName(logID string) string { return "UCL_" + logID }

// Subject is where the events of log logID are published.
func Subject(logID string) string { return "UCL." + logID }

// ReqSubject is where requests for the store name's owner go.
func ReqSubject(name string) string { return "ucl.req." + name }

// EnsureStream creates the stream of log logID if it does not exist.
// Like Publish it asks again while the stream's leader is being elected.
func (n *Node) EnsureStream(logID string) error {
	err := n.untilAnswered(func() error {
		_, err := n.js.StreamInfo(StreamName(logID))
		if errors.Is(err, nats.ErrStreamNotFound) {
			_, err = n.js.AddStream(&nats.StreamConfig{Name: StreamName(logID), Subjects: []string{Subject(logID)},
				Replicas: n.cfg.Replicas, Storage: nats.FileStorage})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("stream of log %s: %w", logID, err)
	}
	return nil
}

// unanswered reports whether err is a JetStream request nobody answered
// (no responders, a timeout): what a stream or the cluster's metadata
// gives while its leader is being elected, e.g. after a server died. An
// answer that is an error (*nats.APIError) is not.
func unanswered(err error) bool {
	var apiErr *nats.APIError
	return !errors.As(err, &apiErr) && (errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrNoStreamResponse))
}

// untilAnswered calls ask until it returns something other than an
// unanswered request, for up to twice Config.Timeout (Publish's budget):
// a takeover after a server died must wait out the election of the
// stream's leader, not fail into its next request.
func (n *Node) untilAnswered(ask func() error) error {
	deadline := time.Now().Add(2 * n.cfg.Timeout)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := ask()
		if err == nil || !unanswered(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}

// Publish appends events first.. to the stream of logID, each only
// directly after its predecessor (ExpectLastSequence), and returns once
// the stream has acknowledged them all. An attempt that gets no answer
// (no responders, a timeout: the stream's leader is being elected, e.g.
// after a server died) is tried again, for up to twice Config.Timeout in
// all: safe, since the expected sequence admits the event only once, and
// better than failing the append, which stops the store taking writes.
func (n *Node) Publish(logID string, first uint64, raws [][]byte) error {
	return n.PublishWhile(logID, first, raws, nil)
}

// PublishWhile is Publish that makes each attempt only while ok (nil:
// always) reports true, else fails with ErrLeaseLost. An owner passes its
// lease's validity: the expected sequence keeps a stale owner from
// forking the chain, but not from extending it right after a new owner
// read the stream's head (that owner would then serve reads without an
// event the stale one acknowledged). Retrying past the lease would open
// that window for as long as an election lasts.
func (n *Node) PublishWhile(logID string, first uint64, raws [][]byte, ok func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.Timeout)
	defer cancel()
	for i, raw := range raws {
		if err := n.publishOne(ctx, logID, first+uint64(i), raw, ok); err != nil {
			return err
		}
	}
	return nil
}

// publishAttempt bounds one publish attempt within Publish's budget.
const publishAttempt = 3 * time.Second

func (n *Node) publishOne(ctx context.Context, logID string, seq uint64, raw []byte, ok func() bool) error {
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		if ok != nil && !ok() {
			return fmt.Errorf("publish event %d of log %s: %w", seq, logID, ErrLeaseLost)
		}
		actx, cancel := context.WithTimeout(ctx, publishAttempt)
		// No Nats-Msg-Id: the stream's duplicate window answers a repeated
		// id with a success before it checks the expected sequence, which
		// would let a stale writer think its different event was stored.
		_, err := n.js.Publish(Subject(logID), raw, nats.ExpectLastSequence(seq-1), nats.Context(actx))
		cancel()
		if err == nil {
			return nil
		}
		// The stream already holding this very event at seq (an earlier
		// try whose ack was lost) is success; anything else at seq is
		// another writer's and refuses this one.
		if got, gerr := n.StreamRaw(logID, seq); gerr == nil && bytes.Equal(got, raw) {
			return nil
		}
		if !unanswered(err) || ctx.Err() != nil {
			return fmt.Errorf("publish event %d of log %s: %w", seq, logID, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("publish event %d of log %s: %w", seq, logID, err)
		case <-time.After(wait):
		}
	}
}

// StreamHead is the last seq in the stream of logID (asking again during
// an election, as EnsureStream does).
func (n *Node) StreamHead(logID string) (uint64, error) {
	var si *nats.StreamInfo
	err := n.untilAnswered(func() (err error) {
		si, err = n.js.StreamInfo(StreamName(logID))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("stream of log %s: %w", logID, err)
	}
	return si.State.LastSeq, nil
}

// StreamRaw is event seq of the stream of logID.
func (n *Node) StreamRaw(logID string, seq uint64) ([]byte, error) {
	m, err := n.js.GetMsg(StreamName(logID), seq)
	if err != nil {
		return nil, fmt.Errorf("read event %d of the stream of log %s: %w", seq, logID, err)
	}
	return m.Data, nil
}

// readStream hands events from..last of the stream of logID to each, in
// batches of up to importBatch, in seq order. One ordered consumer
// streams them (flow-controlled), instead of one request per event.
func (n *Node) readStream(ctx context.Context, logID string, from, last uint64, each func([][]byte) error) error {
	if from > last {
		return nil
	}
	sub, err := n.js.SubscribeSync(Subject(logID), nats.OrderedConsumer(), nats.StartSequence(from),
		nats.BindStream(StreamName(logID)))
	if err != nil {
		return fmt.Errorf("read the stream of log %s: %w", logID, err)
	}
	defer sub.Unsubscribe()
	batch := make([][]byte, 0, min(last-from+1, importBatch))
	for seq := from; seq <= last; seq++ {
		mctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
		m, err := sub.NextMsgWithContext(mctx)
		cancel()
		if err != nil {
			return fmt.Errorf("read event %d of the stream of log %s: %w", seq, logID, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("read event %d of the stream of log %s: %w", seq, logID, err)
		}
		if md.Sequence.Stream != seq {
			// The stream has no limits: a gap means it lost events.
			return fmt.Errorf("read the stream of log %s: got seq %d, want %d", logID, md.Sequence.Stream, seq)
		}
		batch = append(batch, m.Data)
		if len(batch) == cap(batch) || seq == last {
			if err := each(batch); err != nil {
				return err
			}
			batch = make([][]byte, 0, min(last-seq, importBatch))
		}
	}
	return nil
}

// Reconcile brings the local log l and the stream of logID to the same
// head: events the stream has beyond l are imported (verified as rebuild
// verifies Arweave segments), events l has beyond the stream (written
// locally, never acknowledged) are published, and a difference at the
// seq where both end is ErrForked. It returns how many events moved each
// way.
func (n *Node) Reconcile(ctx context.Context, l *log.Log, logID string) (imported, published uint64, err error) {
	last, err := n.StreamHead(logID)
	if err != nil {
		return 0, 0, err
	}
	head, _ := l.Head()
	if common := min(head, last); common > 0 {
		sr, err := n.StreamRaw(logID, common)
		if err != nil {
			return 0, 0, err
		}
		lr, err := l.Raw(common)
		if err != nil {
			return 0, 0, fmt.Errorf("reconcile: %w", err)
		}
		if sha256.Sum256(sr) != sha256.Sum256(lr) {
			return 0, 0, fmt.Errorf("reconcile log %s at seq %d: %w", logID, common, ErrForked)
		}
	}
	err = n.readStream(ctx, logID, head+1, last, func(batch [][]byte) error {
		if err := l.Import(ctx, batch); err != nil {
			return fmt.Errorf("reconcile log %s: %w", logID, err)
		}
		imported += uint64(len(batch))
		return nil
	})
	if err != nil {
		return imported, 0, err
	}
	if head > last {
		var raws [][]byte
		for seq := last + 1; seq <= head; seq++ {
			raw, err := l.Raw(seq)
			if err != nil {
				return 0, 0, fmt.Errorf("reconcile: %w", err)
			}
			raws = append(raws, raw)
		}
		if err := n.Publish(logID, last+1, raws); err != nil {
			return 0, 0, fmt.Errorf("reconcile: %w", err)
		}
		published = uint64(len(raws))
	}
	return imported, published, nil
}

// Owner returns the node id holding the lease of store name ("" : none).
func (n *Node) Owner(name string) (string, error) {
	e, err := n.kv.Get(name)
	if errors.Is(err, nats.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the lease of %s: %w", name, err)
	}
	return string(e.Value()), nil
}

// acquire takes the lease of name, returning its revision.
func (n *Node) acquire(name string) (uint64, error) {
	rev, err := n.kv.Create(name, []byte(n.cfg.NodeID))
	if err == nil {
		return rev, nil
	}
	if !errors.Is(err, nats.ErrKeyExists) {
		return 0, fmt.Errorf("take the lease of %s: %w", name, err)
	}
	e, gerr := n.kv.Get(name)
	if gerr == nil && string(e.Value()) == n.cfg.NodeID {
		// Ours from before a restart: take it up again where it is.
		return n.kv.Update(name, []byte(n.cfg.NodeID), e.Revision())
	}
	owner := "?"
	if gerr == nil {
		owner = string(e.Value())
	}
	return 0, fmt.Errorf("take the lease of %s: %w (%s)", name, ErrLeaseHeld, owner)
}

// Owned is a store this node owns.
type Owned struct {
	Store *ucl.Store
	// Imported and Published are what Reconcile moved at takeover.
	Imported, Published uint64
	// Took is how long taking the store took (lease, reconcile, open).
	Took time.Duration
	// Cut, when set, is the local tail cut at takeover: events this node
	// wrote but the stream never acknowledged (it holds others at those
	// seqs), kept in the store's corrupt/ directory.
	Cut *log.RepairReport
	// Snapshot says whether the projections were restored from the
	// object store (only tried when the local log was empty).
	Snapshot SnapshotUse

	n     *Node
	name  string
	logID string
	sub   *nats.Subscription
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
	mu    sync.Mutex
	rev   uint64
	lost  bool
	// renewed is when the request that last took or renewed the lease was
	// sent (the bucket stored it no earlier); broken is set once a
	// replicate failed (the log takes no more appends).
	renewed time.Time
	broken  bool
	// snapSeq is the seq of the newest snapshot in the object store;
	// snapDue wakes the snapshotter.
	snapSeq uint64
	snapDue chan struct{}
	warn    func(string)
	// acked is the last seq the stream acknowledged: the store's
	// Arweave mirror pushes no further (ucl.Options.MirrorHead), so an
	// event that may yet be cut as never acknowledged never reaches
	// Arweave.
	acked atomic.Uint64
}

// CutDir is where, in a store's directory, a takeover keeps the local
// events it cut (as ucl audit repair does).
const CutDir = "corrupt"

// catchUp reconciles the local log in dir with the stream (Reconcile). A
// local tail the stream does not hold, while the stream holds other
// events at those seqs, was never acknowledged (an acknowledged event is
// in the stream at its seq): it is cut, kept in dir/CutDir, and the
// stream's events imported in its place. It returns the local head before.
func (n *Node) catchUp(ctx context.Context, o *Owned, dir, logID string, opts ucl.Options) (head0 uint64, err error) {
	reconcile := func(fork bool) (keep uint64, forked bool, err error) {
		st, err := store.Open(dir, store.OpenOptions{Keys: opts.Keys, VaultKeyPath: opts.VaultKeyPath})
		if err != nil {
			return 0, false, err
		}
		defer func() {
			if cerr := st.Close(); err == nil {
				err = cerr
			}
		}()
		if !fork {
			head0, _ = st.Log.Head()
		}
		o.Imported, o.Published, err = n.Reconcile(ctx, st.Log, logID)
		if errors.Is(err, ErrForked) && !fork {
			keep, ferr := n.forkPoint(st.Log, logID)
			if ferr != nil {
				return 0, false, fmt.Errorf("%w (%w)", err, ferr)
			}
			return keep, true, nil
		}
		return 0, false, err
	}
	keep, forked, err := reconcile(false)
	if err != nil || !forked {
		return head0, err
	}
	rep, err := log.CutAfter(filepath.Join(dir, store.LogDir), filepath.Join(dir, CutDir), keep,
		"never acknowledged: the cluster's stream holds other events at these seqs")
	if err != nil {
		return head0, fmt.Errorf("cut the unacknowledged tail of log %s: %w", logID, err)
	}
	o.Cut = rep
	if o.warn != nil && rep != nil {
		o.warn(fmt.Sprintf("store %s: %s", o.name, rep))
	}
	_, _, err = reconcile(true)
	return head0, err
}

// forkPoint is the newest seq at which the local log l and the stream of
// logID hold the same event (0: none).
func (n *Node) forkPoint(l *log.Log, logID string) (uint64, error) {
	head, _ := l.Head()
	last, err := n.StreamHead(logID)
	if err != nil {
		return 0, err
	}
	for seq := min(head, last); seq > 0; seq-- {
		sr, err := n.StreamRaw(logID, seq)
		if err != nil {
			return 0, err
		}
		lr, err := l.Raw(seq)
		if err != nil {
			return 0, fmt.Errorf("fork point: %w", err)
		}
		if bytes.Equal(sr, lr) {
			return seq, nil
		}
	}
	return 0, nil
}

// Own takes store name (in dir) over: lease, stream, reconcile, open with
// the publish hook, answer its requests, renew the lease.
func (n *Node) Own(ctx context.Context, name, dir string, opts ucl.Options) (*Owned, error) {
	t0 := time.Now()
	meta, err := store.ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	// The lease's clock starts when the request leaves, not when its
	// answer comes back: the bucket may have stored it any time between,
	// and validity must end before another node can see it expired.
	asked := time.Now()
	rev, err := n.acquire(name)
	if err != nil {
		return nil, err
	}
	o := &Owned{n: n, name: name, logID: meta.LogID, rev: rev, stop: make(chan struct{}), renewed: asked,
		snapDue: make(chan struct{}, 1), warn: opts.Warn}
	// Renewing from now on: importing a long stream may take longer than
	// the lease lives.
	o.wg.Add(1)
	go o.renew()
	fail := func(err error) (*Owned, error) {
		close(o.stop)
		o.wg.Wait()
		o.mu.Lock()
		if !o.lost {
			n.kv.Delete(name, nats.LastRevision(o.rev))
		}
		o.mu.Unlock()
		return nil, err
	}
	if err := n.EnsureStream(meta.LogID); err != nil {
		return fail(err)
	}
	head0, err := n.catchUp(ctx, o, dir, meta.LogID, opts)
	if err != nil {
		return fail(err)
	}
	// After catchUp the local log is the stream's prefix up to its head:
	// all of it acknowledged.
	acked, err := n.StreamHead(meta.LogID)
	if err != nil {
		return fail(err)
	}
	o.acked.Store(acked)
	opts.Replicate = o.replicate
	opts.MirrorHead = o.acked.Load
	s, err := ucl.Open(dir, opts)
	if err != nil {
		return fail(err)
	}
	o.Store = s
	if head0 == 0 && o.Imported > 0 {
		// Nothing local: the projections start from the newest snapshot
		// instead of replaying the whole log (the log itself is imported
		// whole: it is the source of truth, verified from seq 1).
		o.Snapshot = n.restoreSnapshot(ctx, s, dir, meta.LogID)
	} else {
		o.Snapshot.Reason = "the local log was not empty"
	}
	if o.Snapshot.Used {
		o.snapSeq = o.Snapshot.Seq
	} else if b, err := n.obs.GetBytes(manifestObject(meta.LogID)); err == nil {
		if m, err := snapshot.ParseManifest(b); err == nil {
			o.snapSeq = m.Seq
		}
	}
	h := ucl.Handler(s)
	sub, err := n.nc.QueueSubscribe(ReqSubject(name), "owner", func(m *nats.Msg) {
		if !o.Valid() {
			// Not renewed lately: another node may own the store by now,
			// and this copy may be stale. The requester may try again.
			// (Errors cross the socket protocol as 200 with an error.)
			r := nats.NewMsg(m.Reply)
			r.Header.Set("Ucl-Status", strconv.Itoa(http.StatusOK))
			r.Data = []byte(`{"error":{"message":"this node's lease on the store lapsed; try again","class":"unavailable"}}`)
			m.RespondMsg(r)
			return
		}
		go n.serveMsg(h, m)
	})
	if err == nil {
		err = n.nc.Flush()
	}
	if err == nil && o.Lost() {
		err = ErrLeaseLost // while taking the store over
	}
	if err != nil {
		if sub != nil {
			sub.Unsubscribe()
		}
		s.Close()
		return fail(fmt.Errorf("answer requests for %s: %w", name, err))
	}
	o.mu.Lock()
	o.sub = sub
	o.mu.Unlock()
	o.wg.Add(1)
	go o.snapshotter()
	o.Took = time.Since(t0)
	return o, nil
}

func (o *Owned) replicate(first uint64, raws [][]byte) (err error) {
	defer func() {
		if err != nil {
			o.mu.Lock()
			o.broken = true
			o.mu.Unlock()
		}
	}()
	if !o.Valid() {
		return ErrLeaseLost
	}
	if err := o.n.PublishWhile(o.logID, first, raws, o.Valid); err != nil {
		return err
	}
	o.acked.Store(first + uint64(len(raws)) - 1)
	if o.snapshotDue() {
		select {
		case o.snapDue <- struct{}{}:
		default: // the snapshotter is awake already, and looks again when done
		}
	}
	return nil
}

func (o *Owned) renew() {
	defer o.wg.Done()
	t := time.NewTicker(o.n.cfg.LeaseTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
		}
		// No lock across the network calls: Valid must answer at once.
		o.mu.Lock()
		rev, broken := o.rev, o.broken
		o.mu.Unlock()
		if broken {
			o.giveUp(rev)
			return
		}
		asked := time.Now() // as in Own: before the bucket stores it
		nrev, err := o.n.kv.Update(o.name, []byte(o.n.cfg.NodeID), rev)
		taken := false
		if err != nil {
			// Another node holds the key, or it expired (this node was
			// paused, or JetStream was electing leaders longer than the
			// TTL): either way another node may have served the store
			// since, so this copy is done. The server opens the store
			// anew, which takes the lease again and reconciles.
			e, gerr := o.n.kv.Get(o.name)
			taken = errors.Is(gerr, nats.ErrKeyNotFound) || (gerr == nil && string(e.Value()) != o.n.cfg.NodeID)
		}
		o.mu.Lock()
		switch {
		case err == nil:
			o.rev, o.renewed = nrev, asked
		case taken, time.Since(o.renewed) >= o.n.cfg.LeaseTTL/2:
			// Failing for half the TTL means another node may own the
			// store before this one could know.
			o.lost = true
		}
		lost, sub := o.lost, o.sub
		o.mu.Unlock()
		if lost {
			// Stop answering its requests (the queue group would share
			// them with the new owner).
			if sub != nil {
				sub.Unsubscribe()
			}
			return
		}
	}
}

// giveUp ends the lease of an owner whose log takes no more appends (a
// replicate failed): renewing it would keep every other node forwarding
// to an owner that can only answer "try again" (as long as this node's
// server sees no request of its own to drop it, up to its idle close),
// where a node that takes the store over imports the stream and serves
// it. The key is deleted if it is still this lease's (else it expires);
// this node's server drops the Owned, no longer valid, on its next
// request, and takes the store again or forwards as the lease says.
func (o *Owned) giveUp(rev uint64) {
	derr := o.deleteLease(rev)
	o.mu.Lock()
	o.lost = true
	sub := o.sub
	o.mu.Unlock()
	if sub != nil {
		sub.Unsubscribe()
	}
	if derr != nil && o.warn != nil {
		o.warn(fmt.Sprintf("store %s: give up the lease after a failed replicate (it expires instead): %v", o.name, derr))
	}
}

// Valid reports whether this node may still serve the store: the lease
// was renewed within half its TTL (another node can take it only after
// the whole TTL), it was not lost, and no append failed to replicate
// (after which the log takes no more appends). A server should drop an
// Owned that is not valid and open the store anew: that forwards to the
// new owner, or takes the store again and reconciles.
func (o *Owned) Valid() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.lost && !o.broken && time.Since(o.renewed) < o.n.cfg.LeaseTTL/2
}

// Lost reports whether the lease was lost.
func (o *Owned) Lost() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lost
}

// shut stops serving; first reports whether this call did it.
func (o *Owned) shut() (first bool, err error) {
	o.once.Do(func() {
		first = true
		close(o.stop)
		o.wg.Wait()
		err = o.sub.Unsubscribe()
		if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrBadSubscription) {
			err = nil // the node left the cluster, or lost the lease, first
		}
		err = errors.Join(err, o.Store.Close())
	})
	return first, err
}

// Close stops serving the store and gives up its lease.
func (o *Owned) Close() error {
	first, err := o.shut()
	if !first {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.lost {
		err = errors.Join(err, o.deleteLease(o.rev))
	}
	return err
}

// deleteLease deletes the store's key in the lease bucket if it is still
// at revision rev (this owner's); another node's is left alone.
func (o *Owned) deleteLease(rev uint64) error {
	err := o.n.kv.Delete(o.name, nats.LastRevision(rev))
	var apiErr *nats.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == nats.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == nats.JSErrCodeStreamWrongLastSequenceConstant) {
		return nil // another node holds it now: not ours to give back
	}
	return err
}

// Abandon stops serving the store and keeps its lease until it expires,
// as a crashed owner would (tests and a node that must stop at once).
func (o *Owned) Abandon() error {
	_, err := o.shut()
	return err
}

// serveMsg answers one forwarded request with the store's socket handler.
func (n *Node) serveMsg(h http.Handler, m *nats.Msg) {
	path := m.Header.Get("Ucl-Path")
	rec := httptest.NewRecorder()
	req, err := http.NewRequest(http.MethodPost, "http://ucl"+path, bytes.NewReader(m.Data))
	if err != nil {
		rec.WriteHeader(http.StatusBadRequest)
	} else {
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
	}
	r := nats.NewMsg(m.Reply)
	r.Header.Set("Ucl-Status", strconv.Itoa(rec.Code))
	r.Data = rec.Body.Bytes()
	// Headers take a little of the payload limit too.
	if int64(len(r.Data))+1024 > n.nc.MaxPayload() {
		r.Header.Set("Ucl-Status", strconv.Itoa(http.StatusOK))
		r.Data = []byte(`{"error":{"message":"the owner's answer is over the cluster's message size limit; ask the owner node directly or narrow the request","class":"unavailable"}}`)
	}
	m.RespondMsg(r) // a requester that went away has nothing to read it
}

// Client returns an API for store name that forwards every call to its
// owner, wherever it runs.
func (n *Node) Client(name string) *ucl.Client {
	return ucl.NewClient(name, &forwarder{n: n, name: name})
}

type forwarder struct {
	n    *Node
	name string
}

func (f *forwarder) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	m := nats.NewMsg(ReqSubject(f.name))
	m.Header.Set("Ucl-Path", r.URL.Path)
	m.Data = body
	ctx := r.Context()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.n.cfg.Timeout)
		defer cancel()
	}
	// No responder means no node answers the store's subject: a new
	// owner's subscription has not reached every server yet, or the owner
	// died. Nothing was delivered, so asking again is safe, as long as a
	// lease says some node owns the store (bounded by ctx); once none does,
	// the caller should take the store over instead of waiting.
	resp, err := f.n.nc.RequestMsgWithContext(ctx, m)
	for wait := 10 * time.Millisecond; errors.Is(err, nats.ErrNoResponders); wait = min(2*wait, 250*time.Millisecond) {
		if owner, oerr := f.n.Owner(f.name); oerr != nil || owner == "" {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
			resp, err = f.n.nc.RequestMsgWithContext(ctx, m)
			continue
		}
		break
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("forward to the owner of %s: %w", f.name, ErrNoOwner)
	}
	if err != nil {
		return nil, fmt.Errorf("forward to the owner of %s: %w", f.name, err)
	}
	code, _ := strconv.Atoi(resp.Header.Get("Ucl-Status"))
	if code == 0 {
		code = http.StatusBadGateway
	}
	return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code),
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(resp.Data)),
		ContentLength: int64(len(resp.Data)), Request: r}, nil
}
