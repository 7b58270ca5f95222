package ucl

import (
	"context"
	"encoding/json"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/query"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// API is one store's engine, whether this process owns it (*Store) or
// attaches to the owner over its socket (*Client). Requests and results
// are JSON-serializable: they are the bodies of the socket API and the
// CLI's --json shapes. Times in requests are strings: RFC 3339, a date
// (2023-05-08) or unix milliseconds. Progress fields never cross the
// socket.
type API interface {
	// Append parses JSONL events (the whole input is validated first) and
	// appends them.
	Append(ctx context.Context, req AppendRequest) (*AppendResult, error)
	// Remember stores one piece of memory, chunked like Append.
	Remember(ctx context.Context, req RememberRequest) (*AppendResult, error)
	// Tombstone appends a tombstone (documents expanded to their chunks)
	// and reports what it removed.
	Tombstone(ctx context.Context, req TombstoneRequest) (*TombstoneResult, error)
	// Replay calls fn with each event as one JSON document, tombstoned
	// content withheld unless asked for.
	Replay(ctx context.Context, req ReplayRequest, fn func(line json.RawMessage) error) error
	// AuditLog calls fn with one entry per event.
	AuditLog(ctx context.Context, req AuditLogRequest, fn func(AuditEntry) error) error
	// AuditShow reports one event: its header, its audit entry and, with
	// the vault key, its body (withheld when tombstoned), and whether a
	// tombstone removed it.
	AuditShow(ctx context.Context, req AuditShowRequest) (*AuditShowResult, error)
	// AuditVerify scans the whole log (checksums, hash chain and, with
	// the vault key, every seal) as VerifyLog does; damage is a
	// *log.CorruptionError returned with the result.
	AuditVerify(ctx context.Context, req AuditVerifyRequest) (*AuditVerifyResult, error)
	// Search runs hybrid retrieval over the caught-up projections.
	Search(ctx context.Context, req SearchRequest) (*SearchResult, error)
	// Context assembles an LLM context under a token budget.
	Context(ctx context.Context, req ContextRequest) (*ContextResult, error)
	// Sessions lists sessions, most recent first.
	Sessions(ctx context.Context, req SessionsRequest) (*SessionsResult, error)
	// Session returns one session's turns in order (paged) and summary.
	Session(ctx context.Context, req SessionRequest) (*SessionResult, error)
	// Get returns items by chunk id or document parent, with their chunks
	// (and, asked, their earlier versions).
	Get(ctx context.Context, req GetRequest) (*GetResult, error)
	// Index builds a navigable map of the store or of a query's matches
	// under a token budget.
	Index(ctx context.Context, req IndexRequest) (*IndexResult, error)
	// Dedupe reports groups of near-duplicate live items; it changes
	// nothing.
	Dedupe(ctx context.Context, req DedupeRequest) (*DedupeResult, error)
	// Edit replaces an item's content (and meta) with a new version; a
	// chunked item is re-chunked as a whole.
	Edit(ctx context.Context, req EditRequest) (*EditResult, error)
	// Thread follows parent (reply-to) links up and down from an item.
	Thread(ctx context.Context, req ThreadRequest) (*ThreadResult, error)
	// CatchUp brings every projection to the log head.
	CatchUp(ctx context.Context, req CatchUpRequest) (*ProjectionsResult, error)
	// ProjectionStatus reports each projection without catching up.
	ProjectionStatus(ctx context.Context, req ProjectionStatusRequest) (*ProjectionsResult, error)
	// RebuildProjections throws projections away and rebuilds them.
	RebuildProjections(ctx context.Context, req RebuildProjectionsRequest) (*ProjectionsResult, error)
	// VerifyProjections rebuilds every projection aside and compares
	// digests; a difference returns the result and ErrProjectionsDiffer.
	VerifyProjections(ctx context.Context, req VerifyProjectionsRequest) (*VerifyProjectionsResult, error)
	// Push uploads every event not yet on Arweave.
	Push(ctx context.Context, req PushRequest) (*PushResult, error)
	// SyncStatus reports the mirror state, optionally refreshed.
	SyncStatus(ctx context.Context, req SyncStatusRequest) (*SyncStatusResult, error)
	// Checkpoints lists the checkpoints anchored for the log.
	Checkpoints(ctx context.Context, req CheckpointsRequest) (*CheckpointsResult, error)
	// Prove builds an audit proof of one event against an anchored checkpoint.
	Prove(ctx context.Context, req ProveRequest) (*log.Proof, error)
	// Status describes the store.
	Status(ctx context.Context, req StatusRequest) (*StatusResult, error)
	// ShareGrant grants the live chunks of a scope to an Arweave address.
	ShareGrant(ctx context.Context, req ShareGrantRequest) (*ShareGrantResult, error)
	// ShareRevoke revokes a grant (what was shared stays readable).
	ShareRevoke(ctx context.Context, req ShareRevokeRequest) (*ShareRevokeResult, error)
	// ShareList lists the grants given and received.
	ShareList(ctx context.Context, req ShareListRequest) (*ShareListResult, error)
	// SharePull receives the grants addressed to this store's wallet.
	SharePull(ctx context.Context, req SharePullRequest) (*SharePullResult, error)
	// SnapshotCreate snapshots the projections at the log head.
	SnapshotCreate(ctx context.Context, req SnapshotCreateRequest) (*snapshot.CreateResult, error)
	// SnapshotList lists local snapshots, newest first.
	SnapshotList(ctx context.Context, req SnapshotListRequest) (*SnapshotListResult, error)
	// SnapshotVerify checks a snapshot; a failed check returns the result
	// and the error.
	SnapshotVerify(ctx context.Context, req SnapshotVerifyRequest) (*SnapshotVerifyResult, error)
	// SnapshotRestore replaces the projections with a snapshot.
	SnapshotRestore(ctx context.Context, req SnapshotRestoreRequest) (*snapshot.RestoreResult, error)
	// SnapshotPublish uploads a snapshot to Arweave.
	SnapshotPublish(ctx context.Context, req SnapshotPublishRequest) (*snapshot.PushResult, error)
	// RotateKeys shreds tombstoned content: a new vault-key epoch, live
	// DEKs rewrapped, local state cleaned, the old epoch wiped (package rotate).
	RotateKeys(ctx context.Context, req RotateKeysRequest) (*RotateKeysResult, error)
	// Consolidate sends the turns not yet consolidated to the configured
	// model and appends the grounded facts and profiles it derives, each
	// citing its sources (consolidate_engine.go).
	Consolidate(ctx context.Context, req ConsolidateRequest) (*ConsolidateResult, error)
	// Profile returns the current profiles, with their facts and sources.
	Profile(ctx context.Context, req ProfileRequest) (*ProfileResult, error)
	// Close releases what this handle holds (a Store closes the store; a
	// Client only its connections).
	Close() error
	// Dir is the store directory.
	Dir() string
}

// AppendRequest is a JSONL input for Append.
type AppendRequest struct {
	// JSONL holds one event per line (see the package doc of ingest).
	JSONL string `json:"jsonl"`
	// ChunkTokens splits documents and tool calls longer than this many
	// estimated tokens (0: DefaultChunkTokens).
	ChunkTokens int `json:"chunk_tokens,omitempty"`
	// AllowDuplicate writes items whose content duplicates a live item
	// (see DuplicateOf) instead of returning the existing one.
	AllowDuplicate bool     `json:"allow_duplicate,omitempty"`
	Progress       Progress `json:"-"`
}

// EventResult is one appended (or, idempotently, found) event.
type EventResult struct {
	Seq     uint64   `json:"seq"`
	ID      log.ID   `json:"id"`
	Hash    log.Hash `json:"hash"`
	Existed bool     `json:"existed,omitempty"`
	// ChunkID is the chunk id of a store event when it differs from the
	// event id (a chunk of a split document, or one given explicitly).
	ChunkID string `json:"chunk_id,omitempty"`
	// ChunkParent is the document id of a chunk of a split document:
	// Get with it returns the whole document.
	ChunkParent string `json:"chunk_parent,omitempty"`
	// DuplicateOf is set when nothing was written for this event because
	// its content, normalized (package projections/dedup), equals that of
	// a live item of the same session, role and kind (or of an earlier
	// item of the same input): the chunk id of that item's chunk, whose
	// seq, id and hash the other fields then report.
	DuplicateOf string `json:"duplicate_of,omitempty"`
}

// AppendResult lists the events of an Append or Remember, in order. On a
// failure after the first block it lists what was written.
type AppendResult struct {
	Results []EventResult `json:"results"`
	// Document is the id of the document Remember split into chunks
	// (their chunk parent), empty when the content was stored whole; for
	// a duplicate document, the existing one.
	Document string `json:"document,omitempty"`
}

// RememberRequest is one piece of memory.
type RememberRequest struct {
	Content string            `json:"content"`
	Session string            `json:"session,omitempty"`
	Role    string            `json:"role,omitempty"` // default "user"
	Kind    string            `json:"kind,omitempty"` // default "conversation"
	Meta    map[string]string `json:"meta,omitempty"`
	Time    string            `json:"time,omitempty"` // content time (default now)
	// ID is an idempotency key: the same key and content again is a no-op.
	ID          string `json:"id,omitempty"`
	Parent      string `json:"parent,omitempty"`   // chunk id this replies to
	ChunkID     string `json:"chunk_id,omitempty"` // default: the event id
	ChunkTokens int    `json:"chunk_tokens,omitempty"`
	// AllowDuplicate stores the item even when a live item of the same
	// session, role and kind has the same normalized content.
	AllowDuplicate bool `json:"allow_duplicate,omitempty"`
	// Tool makes the item a tool call (kind tool_call; Content is its
	// result and may be empty; Parent the message that triggered it).
	Tool *log.ToolCall `json:"tool,omitempty"`
	// Supersedes lists live items this one replaces as outdated.
	Supersedes []string `json:"supersedes,omitempty"`
}

// TombstoneRequest names what to remove: chunks, whole documents (by
// chunk parent), and/or a session and a content-time range (chunks
// matching all of those given).
type TombstoneRequest struct {
	Chunks    []string `json:"chunks,omitempty"`
	Documents []string `json:"documents,omitempty"`
	Session   string   `json:"session,omitempty"`
	From      string   `json:"from,omitempty"` // inclusive
	To        string   `json:"to,omitempty"`   // exclusive
	Reason    string   `json:"reason,omitempty"`
}

// TombstoneNote says what a tombstone is not.
const TombstoneNote = "note: a tombstone hides content from every projection, query and replay at once, " +
	"but it is not erasure: the ciphertext stays on Arweave and the current vault key can still decrypt it. " +
	"Durable erasure needs a vault-key rotation (shred)."

// TombstoneResult is an appended tombstone and the chunks it removed.
type TombstoneResult struct {
	Seq     uint64   `json:"seq"`
	ID      log.ID   `json:"id"`
	Hash    log.Hash `json:"hash"`
	Removed []string `json:"removed"`
	Erasure bool     `json:"erasure"`
	Note    string   `json:"note"`
	// Derived is what the tombstone did to derived memory, in its batch
	// (consolidate_engine.go).
	Derived *DerivedCascade `json:"derived,omitempty"`
}

// ReplayRequest selects events to replay.
type ReplayRequest struct {
	From    uint64 `json:"from,omitempty"`
	To      uint64 `json:"to,omitempty"`      // 0: head
	Type    string `json:"type,omitempty"`    // store, tombstone, share_grant, share_revoke, rekey
	Session string `json:"session,omitempty"` // only store events of this session
	// Raw prints plaintext headers only (works without the vault key).
	Raw               bool `json:"raw,omitempty"`
	IncludeTombstoned bool `json:"include_tombstoned,omitempty"`
}

// AuditLogRequest filters the audit log.
type AuditLogRequest struct {
	Type  string `json:"type,omitempty"`
	Since string `json:"since,omitempty"` // append time
	Until string `json:"until,omitempty"`
}

// AuditShowRequest names one event.
type AuditShowRequest struct {
	Seq uint64 `json:"seq"`
}

// AuditShowResult is one event as the audit trail sees it.
type AuditShowResult struct {
	AuditEntry
	// Header is the event's 110-byte plaintext header, hex; Prev the hash
	// it chains to.
	Header string   `json:"header"`
	Prev   log.Hash `json:"prev"`
	// Event is the event as replay prints it (with the vault key): the
	// body, or for tombstoned content a placeholder without it.
	Event json.RawMessage `json:"event,omitempty"`
	// TombstonedBy is the seq of the tombstone that removed this event's
	// content (0: none). Status says what that means for erasure.
	TombstonedBy uint64 `json:"tombstoned_by,omitempty"`
	Status       string `json:"status"`
}

// AuditEntry is one event in the audit log.
type AuditEntry struct {
	Seq      uint64   `json:"seq"`
	Time     string   `json:"time"`
	Type     string   `json:"type"`
	ID       log.ID   `json:"id"`
	Hash     log.Hash `json:"hash"`
	By       string   `json:"by"` // the store owner's Arweave address
	KeyEpoch uint32   `json:"key_epoch"`
	// store
	ChunkID string `json:"chunk_id,omitempty"`
	Session string `json:"session,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Role    string `json:"role,omitempty"`
	Bytes   int    `json:"content_bytes,omitempty"`
	// tombstone
	Targets string   `json:"targets,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Erasure string   `json:"erasure,omitempty"` // "pending": tombstoned, not shredded; "shredded": a key rotation erased it
	// Shredded marks an event whose content a key rotation shredded: only
	// its header is known (by design, not damage).
	Shredded bool `json:"shredded,omitempty"`
	// rekey
	RekeyEpoch uint32 `json:"rekey_epoch,omitempty"`
	RekeyKeys  int    `json:"rekey_keys,omitempty"`
	// share
	Grantee string `json:"grantee,omitempty"`
}

// SearchRequest is a retrieval request (see query.Request).
type SearchRequest struct {
	Text string `json:"text"`
	K    int    `json:"k,omitempty"` // 0: query.DefaultK
	// Session is the active session: its chunks rank a little higher.
	Session    string   `json:"session,omitempty"`
	Sessions   []string `json:"sessions,omitempty"` // filter
	Kinds      []string `json:"kinds,omitempty"`    // filter
	Roles      []string `json:"roles,omitempty"`    // filter
	Since      string   `json:"since,omitempty"`
	Until      string   `json:"until,omitempty"`
	Now        string   `json:"now,omitempty"`    // reference time (default: now)
	Origin     string   `json:"origin,omitempty"` // own, shared, all
	Mode       string   `json:"mode,omitempty"`   // hybrid (default), bm25, vector
	NoTemporal bool     `json:"no_temporal,omitempty"`
	Explain    bool     `json:"explain,omitempty"`
	// IncludeSuperseded ranks superseded items normally (they are marked
	// superseded_by either way).
	IncludeSuperseded bool     `json:"include_superseded,omitempty"`
	Progress          Progress `json:"-"`

	// TZ is the IANA time zone of the days of time phrases ("": UTC,
	// "Local": the server's). The REST and MCP faces fill an empty one
	// with their server's [retrieval] timezone.
	TZ string `json:"tz,omitempty"`
	// Meta filters by metadata: every key with its value (AND).
	Meta map[string]string `json:"meta,omitempty"`
	// MMR in (0,1) re-ranks for diversity (maximal marginal relevance,
	// this weight on relevance; 0: off).
	MMR float64 `json:"mmr,omitempty"`
	// AsOf answers from memory as it stood at a log seq (digits) or a
	// time (RFC 3339 or a date): see asof.go.
	AsOf string `json:"as_of,omitempty"`
}

// SearchResult is query.Response and, when time phrases emptied it, a
// note saying so.
type SearchResult struct {
	query.Response
	// TimeFilter is set when time phrases in the text changed the results
	// in a way they do not show: a phrase filter left no result, or no
	// result falls in the window a boosting phrase ranks first.
	TimeFilter *TimeFilterNote `json:"time_filter,omitempty"`
}

// TimeFilterNote explains what time phrases did to a search.
type TimeFilterNote struct {
	// Mode is "filter" (the phrases restricted the results, and none was
	// left) or "boost" (they rank their window first, and no result is in
	// it).
	Mode    string                `json:"mode"`
	Phrases []query.TemporalMatch `json:"phrases"`
	// Since and Until are the window: the effective filter, or the window
	// the phrases boost.
	Since int64 `json:"since_ms,omitempty"`
	Until int64 `json:"until_ms,omitempty"`
	// Without is, for a filter, the number of results (at most K) of the
	// same request with NoTemporal set.
	Without *int `json:"results_without,omitempty"`
}

// DefaultBudget is a context's token budget when the request gives none.
const DefaultBudget = 4000

// ContextRequest asks for an assembled context.
type ContextRequest struct {
	SearchRequest
	Budget int    `json:"budget,omitempty"` // 0: DefaultBudget
	Recent int    `json:"recent,omitempty"` // recent turns of the active session (0: none)
	Format string `json:"format,omitempty"` // xml (default), json, text
	// Exclude lists texts the caller already carries (the messages of a
	// chat request): a recent turn or ranked item whose text equals one of
	// them, compared with runs of white space made one space, is left out.
	Exclude []string `json:"exclude,omitempty"`
}

// ContextResult is the assembly and the context itself.
type ContextResult struct {
	query.Assembly
	Context string `json:"context"`
}

// SessionsRequest lists sessions.
type SessionsRequest struct {
	Limit    int      `json:"limit,omitempty"` // 0: all
	Progress Progress `json:"-"`
}

// SessionsResult lists sessions, most recent first.
type SessionsResult struct {
	Sessions []SessionInfo `json:"sessions"`
}

// SessionRequest shows one session.
type SessionRequest struct {
	ID     string `json:"id"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"` // 0: all
	// Last asks for the last Last chunks instead of a page from Offset
	// (the recent turns of a long session, without reading the rest).
	Last int `json:"last,omitempty"`
	// AsOf shows the session as it stood at a log seq or time (asof.go).
	AsOf     string   `json:"as_of,omitempty"`
	Progress Progress `json:"-"`
}

// SessionResult is a session, its summary and its live chunks in order.
type SessionResult struct {
	Session SessionInfo `json:"session"`
	Summary Summary     `json:"summary"`
	Chunks  []Item      `json:"chunks"`
	// Total is the session's chunk count (Chunks may be one page).
	Total int `json:"total"`
}

// GetMetaLimit bounds the items GetRequest.Meta adds.
const GetMetaLimit = 200

// GetRequest names chunks (by chunk id) or documents (by chunk parent).
type GetRequest struct {
	IDs []string `json:"ids"`
	// Meta adds the live items whose meta holds every pair (exact keys and
	// values, e.g. {"name": "README.md"}), in id order, at most
	// GetMetaLimit of them: how an item is found by its name in any
	// session or none.
	Meta map[string]string `json:"meta,omitempty"`
	// History adds every version of each item found, oldest first.
	History bool `json:"history,omitempty"`
	// AsOf reads the items as they stood at a log seq or time (asof.go).
	AsOf string `json:"as_of,omitempty"`
}

// GetItem is one requested id: a chunk, or a document's chunks in order.
type GetItem struct {
	ID     string `json:"id"`
	Found  bool   `json:"found"`
	Chunks []Item `json:"chunks"`
	// Content is the chunk's content, or the document's chunks joined in
	// order: exactly the stored text when no chunk is missing.
	Content string `json:"content"`
	// Missing lists chunk indexes absent from the document (tombstoned):
	// Content then has gaps.
	Missing []int `json:"missing,omitempty"`
	// History lists the item's versions, oldest first, the current one
	// last (GetRequest.History).
	History []Version `json:"history,omitempty"`
	// SupersededBy lists the live items that replace this one.
	SupersededBy []string `json:"superseded_by,omitempty"`
}

// GetResult answers a GetRequest, one item per id, in request order.
type GetResult struct {
	Items []GetItem `json:"items"`
	// More reports that GetRequest.Meta matched more than GetMetaLimit
	// items.
	More bool `json:"more,omitempty"`
}

// CatchUpRequest brings the projections up to the head.
type CatchUpRequest struct {
	Digests  bool     `json:"digests,omitempty"` // see ProjectionStatusRequest
	Progress Progress `json:"-"`
}

// ProjectionStatusRequest asks for the projections' status. A status
// reports a projection's digest only when one was computed for its current
// state (by VerifyProjections or an earlier request with Digests), since a
// digest costs a pass over the whole state; with Digests it computes the
// missing ones.
type ProjectionStatusRequest struct {
	Digests bool `json:"digests,omitempty"`
}

// RebuildProjectionsRequest rebuilds projections from the log.
type RebuildProjectionsRequest struct {
	Only     []string `json:"only,omitempty"`    // names; nil: all
	Digests  bool     `json:"digests,omitempty"` // see ProjectionStatusRequest
	Progress Progress `json:"-"`
}

// ProjectionsResult is each projection's status.
type ProjectionsResult struct {
	Projections []projections.Status `json:"projections"`
}

// VerifyProjectionsRequest verifies the projections.
type VerifyProjectionsRequest struct {
	Progress Progress `json:"-"`
}

// VerifyProjectionsResult compares the live digests with a rebuild's.
type VerifyProjectionsResult struct {
	OK         bool                   `json:"ok"`
	Digests    map[string]string      `json:"digests"`
	Mismatches []projections.Mismatch `json:"mismatches"`
}

// PushRequest mirrors the log to Arweave.
type PushRequest struct {
	Gateway      string   `json:"gateway,omitempty"`       // endpoint list; default the remembered one, else DefaultGateway
	Bundle       bool     `json:"bundle,omitempty"`        // ANS-104 bundles instead of L1 transactions (Via "bundle")
	Via          string   `json:"via,omitempty"`           // ViaL1, ViaBundle or ViaBundler; default the remembered mode, else L1
	Bundler      string   `json:"bundler,omitempty"`       // bundler URL (Via "bundler"); default the remembered one, else Turbo's
	SegmentBytes int      `json:"segment_bytes,omitempty"` // default mirror.DefaultSegmentBytes (BundlerSegmentBytes through a bundler)
	Estimate     bool     `json:"estimate,omitempty"`      // only say what the push would upload and cost (PushResult.Estimate)
	Progress     Progress `json:"-"`
}

// PushResult is what one push did.
type PushResult struct {
	Gateway     string        `json:"gateway"`
	Mode        string        `json:"mode"`
	Bundler     string        `json:"bundler,omitempty"`  // the bundler items went through (Mode "bundler")
	Estimate    *PushEstimate `json:"estimate,omitempty"` // with PushRequest.Estimate, or when the wallet cannot pay
	HeadSeq     uint64        `json:"head_seq"`
	CoveredSeq  uint64        `json:"covered_seq"`
	SafeSeq     uint64        `json:"safe_seq"`
	Uploaded    int           `json:"uploaded"`
	Adopted     int           `json:"adopted"`
	Resolved    int           `json:"resolved"`
	BytesPosted int64         `json:"bytes_posted"`
	Segments    []SegmentView `json:"segments"` // segments new in the state after this push
	// Checkpoint is the checkpoint anchored for CoveredSeq (by this push
	// when Anchored, else found already anchored).
	Checkpoint *CheckpointView `json:"checkpoint,omitempty"`
	// Disclosures counts the share disclosures posted (grants, and the
	// tombstones and revokes their grantees must learn of).
	Disclosures int    `json:"disclosures,omitempty"`
	Error       string `json:"error,omitempty"`
}

// SyncStatusRequest reads the mirror state.
type SyncStatusRequest struct {
	Gateway string `json:"gateway,omitempty"`
	// Refresh asks the gateway about unconfirmed segments first.
	Refresh bool `json:"refresh,omitempty"`
}

// SegmentView is one segment in SyncStatusResult.
type SegmentView struct {
	First         uint64 `json:"first"`
	Last          uint64 `json:"last"`
	Status        string `json:"status"`
	TxID          string `json:"tx"`
	BundleID      string `json:"bundle,omitempty"`
	Height        int64  `json:"height,omitempty"`
	Confirmations *int64 `json:"confirmations,omitempty"`
	Size          int    `json:"size"`
	Adopted       bool   `json:"adopted,omitempty"`
	// Diverged: the local log no longer holds this segment's events (it
	// was cut below it and regrown): it covers nothing of the local log.
	Diverged bool `json:"diverged,omitempty"`
}

// SyncStatusResult is the mirror state.
type SyncStatusResult struct {
	LogID        string        `json:"log_id"`
	HeadSeq      uint64        `json:"head_seq"`
	CoveredSeq   uint64        `json:"covered_seq"`
	SafeSeq      uint64        `json:"safe_seq"`
	Segments     []SegmentView `json:"segments"`
	SegmentCount int           `json:"segment_count"`
	Posting      int           `json:"posting"`
	Submitted    int           `json:"submitted"`
	Confirmed    int           `json:"confirmed"`
	Bytes        int64         `json:"bytes"`
	Unmirrored   uint64        `json:"unmirrored"`
	Refreshed    bool          `json:"refreshed"`
	// Payer is who pays the next push: "bundler" (with the bundler's URL)
	// or "wallet"; with Refresh and the wallet paying, the wallet's balance
	// in winston (nil when the gateway could not be asked).
	Payer          string `json:"payer"`
	Bundler        string `json:"bundler,omitempty"`
	BalanceWinston *int64 `json:"balance_winston,omitempty"`
	GatewayHeight  *int64 `json:"gateway_height,omitempty"`
}

// StatusRequest asks for the store's status.
type StatusRequest struct{}

// MirrorSummary is the local mirror state in StatusResult.
type MirrorSummary struct {
	Segments   int    `json:"segments"`
	CoveredSeq uint64 `json:"covered_seq"`
	SafeSeq    uint64 `json:"safe_seq"`
	Posting    int    `json:"posting"`
	Submitted  int    `json:"submitted"`
	Confirmed  int    `json:"confirmed"`
	Bytes      int64  `json:"bytes"`
	Diverged   int    `json:"diverged,omitempty"` // segments the local log no longer matches (SegmentView.Diverged)
}

// StatusResult describes the store.
type StatusResult struct {
	Dir           string         `json:"dir"`
	Events        uint64         `json:"events"`
	HeadSeq       uint64         `json:"head_seq"`
	HeadHash      string         `json:"head_hash"`
	SizeBytes     int64          `json:"size_bytes"`
	LogBytes      int64          `json:"log_bytes"`
	Durability    string         `json:"durability"`
	LogID         string         `json:"log_id"`
	WalletAddress string         `json:"wallet_address"`
	VaultKey      bool           `json:"vault_key"`
	Mirror        *MirrorSummary `json:"mirror,omitempty"`
	// MirrorText is the mirror line for people.
	MirrorText string `json:"mirror_text"`
	// KeyEpoch is the vault key's current epoch (0 without the key); each
	// key rotation (shred) adds one.
	KeyEpoch uint32 `json:"key_epoch,omitempty"`
}

// SnapshotCreateRequest creates a snapshot.
type SnapshotCreateRequest struct {
	// Keep is how many snapshots remain, the new one included (0:
	// snapshot.DefaultKeep; negative: keep all).
	Keep     int      `json:"keep,omitempty"`
	Progress Progress `json:"-"`
}

// SnapshotListRequest lists snapshots.
type SnapshotListRequest struct{}

// SnapshotInfo is a listed snapshot; Error is set when its manifest
// cannot be read.
type SnapshotInfo struct {
	snapshot.Info
	Error string `json:"error,omitempty"`
}

// SnapshotListResult lists snapshots, newest first.
type SnapshotListResult struct {
	Snapshots []SnapshotInfo `json:"snapshots"`
}

// SnapshotVerifyRequest verifies a snapshot ("" : the newest).
type SnapshotVerifyRequest struct {
	Name     string   `json:"name,omitempty"`
	Progress Progress `json:"-"`
}

// SnapshotVerifyResult lists the checks run.
type SnapshotVerifyResult struct {
	Name   string           `json:"name"`
	OK     bool             `json:"ok"`
	Checks []snapshot.Check `json:"checks"`
	Error  string           `json:"error,omitempty"`
}

// SnapshotRestoreRequest restores a snapshot ("" : the newest usable).
type SnapshotRestoreRequest struct {
	Name string `json:"name,omitempty"`
	// NoFallback fails instead of rebuilding from the log when no
	// snapshot is usable.
	NoFallback bool     `json:"no_fallback,omitempty"`
	Progress   Progress `json:"-"`
}

// SnapshotPublishRequest uploads a snapshot ("" : the newest).
type SnapshotPublishRequest struct {
	Name     string   `json:"name,omitempty"`
	Gateway  string   `json:"gateway,omitempty"`
	PartSize int      `json:"part_size,omitempty"` // default snapshot.DefaultPartSize
	Progress Progress `json:"-"`
}

var _ API = (*Store)(nil)
