// Package ucl is the engine of the Unlimited Context Log: one Store owns a
// store directory and everything derived from it — the event log, the
// vault keys and wallet, the projection set (opened on first use and
// caught up before every read), the query engine, the embedder and its
// cache, the Arweave mirror state and the snapshots — and closes all of
// it. The CLI (cmd/ucl), the MCP server and the HTTP API are front ends:
// they build a request, call one method and print the result. Library
// errors name no CLI flags; front ends add hints.
//
// # Opening, owning, attaching
//
//	Init(dir, InitOptions) (*Store, error)        create a store and open it
//	Open(dir, Options) (*Store, error)            open (takes the store lock)
//	(*Store).Close() error                        release everything it opened
//	(*Store).Serve(ctx) error                     answer the API on DIR/ucl.sock until ctx ends
//	Dial(dir) (*Client, error)                    attach to the owner (ErrNoOwner; removes a stale socket)
//	Attach(dir, Options) (API, error)             the owner's Client, else the store opened here
//	Handler(API) http.Handler                     the JSON API, for other listeners
//	Watch(ctx, API, WatchOptions, report) error   the mirror loop (woken by appends in the owner)
//	Rebuild(ctx, RebuildOptions) (*RebuildResult, error)   recover a store from Arweave (its segments recorded as mirrored)
//	VerifyLog(ctx, dir, Options, Progress)        full log scan: by the owner when one serves, else here (works on a log Open refuses)
//	LoadVaultKey(dir, Options) / ImportVaultKey(dir, kr) / VaultKeyPath(dir)
//	SealVaultKey(dir, Options, passphrase) / UnsealVaultKey(dir, Options)   passphrase sealing of vault.key (crypto/doc.go); Options.Passphrase opens a sealed one
//	VerifyProof(ctx, proof.VerifyRequest) (*proof.VerifyResult, error)   check a proof file: no store, no key (package proof)
//	ValidateJSONL(jsonl, chunkTokens) / ParseTime(s) / ErrorCodes(err) / SocketPath(dir)
//
// # Near-duplicates
//
// Append and Remember write nothing for an item whose text, normalized
// (projections/dedup.Normalize: zero-width characters dropped, white-space
// runs made one space and trimmed, letters lowered; nothing else), equals
// a live item of the same session, role and kind, or an earlier item of
// the same input; a chunked document must match chunk for chunk. Its
// results carry DuplicateOf and the existing item's seq, id and hash.
// AllowDuplicate (or a JSONL line's "allow_duplicate") turns the check off. The lookup is one seek in the dedup
// projection, caught up alone before the check; the check and the append
// hold one lock, so two concurrent stores of one text write it once.
//
// Options (options.go) is the one documented options struct; defaults
// live there as constants (DefaultGateway, DefaultEmbedTimeout,
// DefaultChunkTokens, AppendBlock, DefaultSessionsLimit, SocketName) and
// next to their requests (DefaultBudget, AttachWait).
//
// # Methods (the API interface, implemented by *Store and *Client)
//
// Methods (methods.go) declares each one once: its wire name (the socket
// route POST /v1/{name}), REST route, MCP tool and CLI command. The
// socket handler and the REST routes are built from it, and tests hold
// the Client, the CLI, the MCP tools and this list against it. Every
// error has a class (ClassOf: bad_request, not_found, conflict,
// forbidden, unavailable, internal) that crosses the socket and that each
// face maps to its own form.
//
//	Append(ctx, AppendRequest) (*AppendResult, error)            JSONL events, validated whole first
//	Remember(ctx, RememberRequest) (*AppendResult, error)        one item (`ucl store`), chunked
//	Tombstone(ctx, TombstoneRequest) (*TombstoneResult, error)   documents expanded to chunks; ErrNoMatch if nothing live matches
//	Replay(ctx, ReplayRequest, fn(json.RawMessage) error) error  tombstoned content withheld unless asked
//	AuditLog(ctx, AuditLogRequest, fn(AuditEntry) error) error
//	AuditShow(ctx, AuditShowRequest) (*AuditShowResult, error)   one event: header, audit entry, body (with the key)
//	AuditVerify(ctx, AuditVerifyRequest) (*AuditVerifyResult, error)  full log scan (result and *log.CorruptionError on damage)
//	Search(ctx, SearchRequest) (*SearchResult, error)            hybrid retrieval (query.Response + TimeFilter note)
//	Context(ctx, ContextRequest) (*ContextResult, error)         context under a token budget
//	Sessions(ctx, SessionsRequest) (*SessionsResult, error)
//	Session(ctx, SessionRequest) (*SessionResult, error)         turns in order, paged, with summary
//	Get(ctx, GetRequest) (*GetResult, error)                     chunks by id, documents by parent (Content: the exact text); History: every version
//	Edit(ctx, EditRequest) (*EditResult, error)                  a new version of an item (documents re-chunked whole); ErrUnknownItem, ErrTombstoned, ErrEditChunk
//	Thread(ctx, ThreadRequest) (*ThreadResult, error)            parent (reply-to) links followed up and down, tool calls included
//	Index(ctx, IndexRequest) (*IndexResult, error)               a navigable map under a token budget (package index; links as data)
//	Dedupe(ctx, DedupeRequest) (*DedupeResult, error)            near-duplicate groups (MinHash); changes nothing
//	CatchUp(ctx, CatchUpRequest) (*ProjectionsResult, error)
//	ProjectionStatus(ctx, ProjectionStatusRequest) (*ProjectionsResult, error)
//	RebuildProjections(ctx, RebuildProjectionsRequest) (*ProjectionsResult, error)
//	VerifyProjections(ctx, VerifyProjectionsRequest) (*VerifyProjectionsResult, error)
//	Push(ctx, PushRequest) (*PushResult, error)                  mirror to Arweave
//	SyncStatus(ctx, SyncStatusRequest) (*SyncStatusResult, error)
//	Checkpoints(ctx, CheckpointsRequest) (*CheckpointsResult, error)   anchored Merkle checkpoints
//	Prove(ctx, ProveRequest) (*log.Proof, error)                 audit proof against the newest covering checkpoint (package proof)
//	Status(ctx, StatusRequest) (*StatusResult, error)
//	ShareGrant(ctx, ShareGrantRequest) (*ShareGrantResult, error)      grant live chunks to an Arweave address (package share)
//	ShareRevoke / ShareList                                           revoke a grant; grants given and received
//	SharePull(ctx, SharePullRequest) (*SharePullResult, error)        receive grants: verify, decrypt, project (package share)
//	SnapshotCreate / SnapshotList / SnapshotVerify / SnapshotRestore / SnapshotPublish
//	Consolidate(ctx, ConsolidateRequest) (*ConsolidateResult, error)   derived memory: grounded facts and profiles as events, citing sources
//	Profile(ctx, ProfileRequest) (*ProfileResult, error)               the current profiles with their facts and sources
//	RotateKeys(ctx, RotateKeysRequest) (*RotateKeysResult, error)      shred: new epoch, live DEKs rewrapped, old epoch wiped (package rotate)
//
// Derived memory (consolidate_engine.go, package consolidate; *Store and
// *Client implement Consolidator, methods consolidate and profile on the
// socket): Consolidate(ctx, ConsolidateRequest) asks the model configured
// in Options.Consolidate for grounded facts of the turns not yet
// consolidated and appends them (kind knowledge) with a profile per
// subject (kind profile), each citing its sources in meta derived_from;
// Profile(ctx, ProfileRequest) returns the current profiles, which open
// every Context. Tombstone (and a tombstone line of Append) carries a
// forgotten source on to what was derived from it, in the same batch.
//
// The conversation model (conv.go): RememberRequest.Tool makes an item a
// tool call (store body v2, log/doc.go) and RememberRequest.Supersedes
// marks older items outdated (every id must be live: ErrUnknownItem);
// searches rank superseded items below the current ones and mark them
// (superseded_by) unless SearchRequest.IncludeSuperseded, and a context
// never packs an item together with one that supersedes it.
//
// Requests and results are JSON-serializable and are the CLI's --json
// shapes. Times in requests are strings: RFC 3339, a date (2023-05-08) or
// unix milliseconds. Progress callbacks (json:"-") never cross a socket.
//
// # One owner, many users
//
// The process that opens a store owns it (the log's lock). While it
// serves (Serve), it listens on DIR/ucl.sock (mode 0600 from its first
// moment: bound in a private 0700 directory, then renamed into place) and
// answers processes of its own user only (peer credentials: SO_PEERCRED,
// LOCAL_PEERCRED; another uid's connection is closed unread) the API over
// HTTP:
//
//	POST /v1/{method}   body: the request as JSON
//	  200 {"result": RESULT}                      success
//	  200 {"result": RESULT|null, "error": ERROR} failure (a partial result may come along)
//	POST /v1/replay, /v1/audit_log   NDJSON stream: {"line": …} / {"entry": …} per item,
//	                                 then {"error": ERROR} or {"done": true}
//
// ERROR is {"message": "...", "codes": ["log_locked", ...]}: codes name
// the sentinel errors the owner's error matched (errors.go; frozen), so a
// Client's error matches the same sentinels with errors.Is and front ends
// give the same messages, hints and exit codes either way. Method names
// are the snake_case of the Go method (append, remember, tombstone,
// audit_show, audit_verify, search, context, sessions, session, get, edit, thread, index, dedupe, catch_up, projection_status,
// rebuild_projections, verify_projections, push, sync_status, status, checkpoints, prove,
// share_grant, share_revoke, share_list, share_pull, snapshot_create, snapshot_list, snapshot_verify, snapshot_restore,
// snapshot_publish, rotate_keys).
//
// A request body is at most 64 MiB, refused from its declared length
// before it is read; a Client sends a larger append in pieces cut at line
// ends.
//
// Attach (see client.go) finds the owner: it dials DIR/ucl.sock; a socket
// nobody answers while the store lock is free is stale (owner killed) and
// is removed; with no owner the caller opens the store itself.
//
// # Packages behind the engine
//
// Features with formats of their own live in packages the engine calls
// with a small seam of what they need, each specified in its doc.go:
// snapshot (projection snapshots), proof (anchored checkpoints, audit
// proofs; proof.Log), index (the navigable index; links as data), rotate
// (vault-key rotation and its journal; rotate.Env).
package ucl
