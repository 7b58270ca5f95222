package ucl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// AttachWait is how long Attach waits for a store held by a process that
// does not serve (a one-shot command) before giving up with log.ErrLocked.
const AttachWait = 3 * time.Second

// Client is an API attached to the owner of a store over its socket.
type Client struct {
	dir string
	hc  *http.Client
}

var _ API = (*Client)(nil)

// Dial connects to the owner of the store in dir. It returns ErrNoOwner
// when no process serves the store; a socket left by a dead owner (the
// connection is refused and the store lock is free) is removed first.
func Dial(dir string) (*Client, error) {
	path := SocketPath(dir)
	if _, err := os.Stat(path); err != nil {
		return nil, ErrNoOwner
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		removeStaleSocket(dir)
		return nil, ErrNoOwner
	}
	conn.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{dir: dir, hc: &http.Client{Transport: tr}}, nil
}

// removeStaleSocket removes the socket of the store in dir if its owner
// is gone. It holds the store lock while removing, so a new owner (which
// takes the lock before it creates its socket) cannot lose its socket.
func removeStaleSocket(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, store.LogDir, "LOCK"), os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return // the owner lives (or is starting): leave its socket alone
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	os.Remove(SocketPath(dir))
}

// Attach returns the API of the store in dir: the owner's over its socket
// when a process serves it, else the store opened by this process with o.
// A store held by a process that does not serve is waited for up to
// AttachWait. The caller closes the API.
func Attach(dir string, o Options) (API, error) {
	deadline := time.Now().Add(AttachWait)
	for {
		if c, err := Dial(dir); err == nil {
			return c, nil
		}
		s, err := Open(dir, o)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, log.ErrLocked) || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NewClient returns an API whose requests (POST /v1/{method}, the
// socket's protocol, see Handler) travel over rt: a cluster forwards them
// to a store's owner on another machine. dir is what Dir reports.
func NewClient(dir string, rt http.RoundTripper) *Client {
	return &Client{dir: dir, hc: &http.Client{Transport: rt}}
}

// Close releases the client's idle connections; the owner keeps running.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// Dir returns the store directory.
func (c *Client) Dir() string { return c.dir }

// post implements API through the owner.
func (c *Client) post(ctx context.Context, method string, req any) (*http.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://ucl/v1/"+method, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hr)
	if err != nil {
		return nil, sendError(ctx, method, err) // outcome.go
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: HTTP %s: %w", method, resp.Status, ErrProtocol)
	}
	return resp, nil
}

func call[Res any](c *Client, ctx context.Context, method string, req any) (*Res, error) {
	resp, err := c.post(ctx, method, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	res, err := decodeResponse[Res](resp.Body)
	if errors.Is(err, ErrProtocol) {
		// No whole answer: the owner may have applied the request.
		return nil, &OutcomeUnknownError{Method: method, Err: err}
	}
	return res, err
}

// decodeResponse reads one {"result": …, "error": …} answer.
func decodeResponse[Res any](r io.Reader) (*Res, error) {
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *wireError      `json:"error"`
	}
	if err := json.NewDecoder(r).Decode(&out); err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrProtocol)
	}
	var res *Res
	if len(out.Result) > 0 && string(out.Result) != "null" {
		res = new(Res)
		if err := json.Unmarshal(out.Result, res); err != nil {
			return nil, fmt.Errorf("%v: %w", err, ErrProtocol)
		}
	}
	return res, fromWire(out.Error)
}

func callStream[T any](c *Client, ctx context.Context, method, field string, req any, fn func(T) error) error {
	resp, err := c.post(ctx, method, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	err = decodeStream(resp.Body, field, fn)
	if errors.Is(err, ErrProtocol) {
		return fmt.Errorf("%s: %w", method, err)
	}
	return err
}

// decodeStream reads an NDJSON stream of {field: item} lines ended by
// {"done": true} or {"error": …}, calling fn per item.
func decodeStream[T any](r io.Reader, field string, fn func(T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("%v: %w", err, ErrProtocol)
		}
		if v, ok := m[field]; ok {
			var item T
			if err := json.Unmarshal(v, &item); err != nil {
				return fmt.Errorf("%v: %w", err, ErrProtocol)
			}
			if err := fn(item); err != nil {
				return err
			}
			continue
		}
		if v, ok := m["error"]; ok {
			var w wireError
			if err := json.Unmarshal(v, &w); err != nil {
				return fmt.Errorf("%v: %w", err, ErrProtocol)
			}
			return fromWire(&w)
		}
		if _, ok := m["done"]; ok {
			return nil
		}
		return fmt.Errorf("unknown stream line: %w", ErrProtocol)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("stream ended early: %w", ErrProtocol)
}

// Consolidate runs Store.Consolidate in the owner (with the owner's model
// settings and API key; the request may name another model or endpoint).
func (c *Client) Consolidate(ctx context.Context, req ConsolidateRequest) (*ConsolidateResult, error) {
	return call[ConsolidateResult](c, ctx, "consolidate", req)
}

// Profile runs Store.Profile in the owner.
func (c *Client) Profile(ctx context.Context, req ProfileRequest) (*ProfileResult, error) {
	return call[ProfileResult](c, ctx, "profile", req)
}

// Append implements API through the owner.
func (c *Client) Append(ctx context.Context, req AppendRequest) (*AppendResult, error) {
	var evs []EventResult
	req.JSONL, evs = appendIDs(req.JSONL, req.ChunkTokens) // outcome.go
	if len(req.JSONL) <= appendPieceBytes {
		res, err := call[AppendResult](c, ctx, "append", req)
		return res, withEvents(err, evs)
	}
	// Over one socket request (maxRequestBytes): pieces cut at line ends,
	// in order, like the blocks of AppendBlock events a large input is
	// written in anyway. A failed piece returns the results so far.
	out := &AppendResult{}
	for rest := req.JSONL; rest != ""; {
		n := len(rest)
		if n > appendPieceBytes {
			n = strings.LastIndexByte(rest[:appendPieceBytes], '\n') + 1
			if n == 0 { // one line longer than a piece: the owner says so
				n = min(len(rest), strings.IndexByte(rest, '\n')+1)
				if n == 0 {
					n = len(rest)
				}
			}
		}
		piece := req
		piece.JSONL, rest = rest[:n], rest[n:]
		if strings.TrimSpace(piece.JSONL) == "" {
			continue
		}
		res, err := call[AppendResult](c, ctx, "append", piece)
		if res != nil {
			out.Results = append(out.Results, res.Results...)
		}
		if err != nil {
			return out, withEvents(err, evs)
		}
	}
	return out, nil
}

// appendPieceBytes is the largest JSONL text a Client sends in one append
// request: an eighth of maxRequestBytes, as JSON escaping can make a byte
// six (json.Marshal writes "<" as \u003c). A var for tests.
var appendPieceBytes = maxRequestBytes / 8

// Remember implements API through the owner.
func (c *Client) Remember(ctx context.Context, req RememberRequest) (*AppendResult, error) {
	var evs []EventResult
	req, evs = rememberIDs(req) // outcome.go
	res, err := call[AppendResult](c, ctx, "remember", req)
	return res, withEvents(err, evs)
}

// Tombstone implements API through the owner.
func (c *Client) Tombstone(ctx context.Context, req TombstoneRequest) (*TombstoneResult, error) {
	return call[TombstoneResult](c, ctx, "tombstone", req)
}

// Replay implements API through the owner.
func (c *Client) Replay(ctx context.Context, req ReplayRequest, fn func(json.RawMessage) error) error {
	return callStream(c, ctx, "replay", "line", req, fn)
}

// AuditShow implements API through the owner.
func (c *Client) AuditShow(ctx context.Context, req AuditShowRequest) (*AuditShowResult, error) {
	return call[AuditShowResult](c, ctx, "audit_show", req)
}

// AuditLog implements API through the owner.
func (c *Client) AuditLog(ctx context.Context, req AuditLogRequest, fn func(AuditEntry) error) error {
	return callStream(c, ctx, "audit_log", "entry", req, fn)
}

// Search implements API through the owner.
func (c *Client) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	return call[SearchResult](c, ctx, "search", req)
}

// Context implements API through the owner.
func (c *Client) Context(ctx context.Context, req ContextRequest) (*ContextResult, error) {
	return call[ContextResult](c, ctx, "context", req)
}

// Sessions implements API through the owner.
func (c *Client) Sessions(ctx context.Context, req SessionsRequest) (*SessionsResult, error) {
	return call[SessionsResult](c, ctx, "sessions", req)
}

// Session implements API through the owner.
func (c *Client) Session(ctx context.Context, req SessionRequest) (*SessionResult, error) {
	return call[SessionResult](c, ctx, "session", req)
}

// Get implements API through the owner.
func (c *Client) Get(ctx context.Context, req GetRequest) (*GetResult, error) {
	return call[GetResult](c, ctx, "get", req)
}

// Index implements API through the owner.
func (c *Client) Index(ctx context.Context, req IndexRequest) (*IndexResult, error) {
	return call[IndexResult](c, ctx, "index", req)
}

// Dedupe implements API through the owner.
func (c *Client) Dedupe(ctx context.Context, req DedupeRequest) (*DedupeResult, error) {
	return call[DedupeResult](c, ctx, "dedupe", req)
}

// Edit implements API through the owner.
func (c *Client) Edit(ctx context.Context, req EditRequest) (*EditResult, error) {
	return call[EditResult](c, ctx, "edit", req)
}

// Thread implements API through the owner.
func (c *Client) Thread(ctx context.Context, req ThreadRequest) (*ThreadResult, error) {
	return call[ThreadResult](c, ctx, "thread", req)
}

// CatchUp implements API through the owner.
func (c *Client) CatchUp(ctx context.Context, req CatchUpRequest) (*ProjectionsResult, error) {
	return call[ProjectionsResult](c, ctx, "catch_up", req)
}

// ProjectionStatus implements API through the owner.
func (c *Client) ProjectionStatus(ctx context.Context, req ProjectionStatusRequest) (*ProjectionsResult, error) {
	return call[ProjectionsResult](c, ctx, "projection_status", req)
}

// RebuildProjections implements API through the owner.
func (c *Client) RebuildProjections(ctx context.Context, req RebuildProjectionsRequest) (*ProjectionsResult, error) {
	return call[ProjectionsResult](c, ctx, "rebuild_projections", req)
}

// VerifyProjections implements API through the owner.
func (c *Client) VerifyProjections(ctx context.Context, req VerifyProjectionsRequest) (*VerifyProjectionsResult, error) {
	return call[VerifyProjectionsResult](c, ctx, "verify_projections", req)
}

// Push implements API through the owner.
func (c *Client) Push(ctx context.Context, req PushRequest) (*PushResult, error) {
	return call[PushResult](c, ctx, "push", req)
}

// SyncStatus implements API through the owner.
func (c *Client) SyncStatus(ctx context.Context, req SyncStatusRequest) (*SyncStatusResult, error) {
	return call[SyncStatusResult](c, ctx, "sync_status", req)
}

// ShareGrant implements API through the owner.
func (c *Client) ShareGrant(ctx context.Context, req ShareGrantRequest) (*ShareGrantResult, error) {
	return call[ShareGrantResult](c, ctx, "share_grant", req)
}

// ShareRevoke implements API through the owner.
func (c *Client) ShareRevoke(ctx context.Context, req ShareRevokeRequest) (*ShareRevokeResult, error) {
	return call[ShareRevokeResult](c, ctx, "share_revoke", req)
}

// ShareList implements API through the owner.
func (c *Client) ShareList(ctx context.Context, req ShareListRequest) (*ShareListResult, error) {
	return call[ShareListResult](c, ctx, "share_list", req)
}

// SharePull implements API through the owner.
func (c *Client) SharePull(ctx context.Context, req SharePullRequest) (*SharePullResult, error) {
	return call[SharePullResult](c, ctx, "share_pull", req)
}

// Checkpoints implements API through the owner.
func (c *Client) Checkpoints(ctx context.Context, req CheckpointsRequest) (*CheckpointsResult, error) {
	return call[CheckpointsResult](c, ctx, "checkpoints", req)
}

// Prove implements API through the owner.
func (c *Client) Prove(ctx context.Context, req ProveRequest) (*log.Proof, error) {
	return call[log.Proof](c, ctx, "prove", req)
}

// Status implements API through the owner.
func (c *Client) Status(ctx context.Context, req StatusRequest) (*StatusResult, error) {
	return call[StatusResult](c, ctx, "status", req)
}

// SnapshotCreate implements API through the owner.
func (c *Client) SnapshotCreate(ctx context.Context, req SnapshotCreateRequest) (*snapshot.CreateResult, error) {
	return call[snapshot.CreateResult](c, ctx, "snapshot_create", req)
}

// SnapshotList implements API through the owner.
func (c *Client) SnapshotList(ctx context.Context, req SnapshotListRequest) (*SnapshotListResult, error) {
	return call[SnapshotListResult](c, ctx, "snapshot_list", req)
}

// SnapshotVerify implements API through the owner.
func (c *Client) SnapshotVerify(ctx context.Context, req SnapshotVerifyRequest) (*SnapshotVerifyResult, error) {
	return call[SnapshotVerifyResult](c, ctx, "snapshot_verify", req)
}

// SnapshotRestore implements API through the owner.
func (c *Client) SnapshotRestore(ctx context.Context, req SnapshotRestoreRequest) (*snapshot.RestoreResult, error) {
	return call[snapshot.RestoreResult](c, ctx, "snapshot_restore", req)
}

// SnapshotPublish implements API through the owner.
func (c *Client) SnapshotPublish(ctx context.Context, req SnapshotPublishRequest) (*snapshot.PushResult, error) {
	return call[snapshot.PushResult](c, ctx, "snapshot_publish", req)
}

// OwnerGone reports whether err says the owner's socket refused the
// connection: the request was not sent, so retrying it (after Attach)
// cannot apply it twice.
func OwnerGone(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}

// RotateKeys implements API through the owner.
func (c *Client) RotateKeys(ctx context.Context, req RotateKeysRequest) (*RotateKeysResult, error) {
	return call[RotateKeysResult](c, ctx, "rotate_keys", req)
}
