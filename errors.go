package ucl

import (
	"context"
	"errors"
	"strings"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/query"
	"github.com/unlimitedcontext/ucl/snapshot"
)

var (
	// ErrBadRequest is returned when a request's fields are invalid or
	// contradict each other.
	ErrBadRequest = errors.New("ucl: bad request")
	// ErrUnknownEmbedder is returned by Open when Options.Embedder.Kind
	// names no embedder.
	ErrUnknownEmbedder = errors.New("ucl: unknown embedder")
	// ErrEmbedderConfig is returned by Open when an HTTP embedder lacks its
	// URL or model.
	ErrEmbedderConfig = errors.New("ucl: embedder needs a URL and a model")
	// ErrNoInput is returned by Append when the input holds no event.
	ErrNoInput = errors.New("ucl: no events in input")
	// ErrNoTargets is returned by Tombstone when the request names nothing
	// to remove.
	ErrNoTargets = errors.New("ucl: tombstone without targets")
	// ErrNoDocument is returned by Tombstone when a document parent has no
	// live chunks.
	ErrNoDocument = errors.New("ucl: no live document")
	// ErrNoMatch is returned by Tombstone when its targets match no live
	// chunk; nothing is written.
	ErrNoMatch = errors.New("ucl: matches no live chunk")
	// ErrNoWallet is returned by mirror operations on a store without an
	// Arweave wallet file.
	ErrNoWallet = errors.New("ucl: this store has no Arweave wallet")
	// ErrBadWallet is returned when the store's wallet is not a usable
	// Arweave wallet.
	ErrBadWallet = errors.New("ucl: unusable Arweave wallet")
	// ErrProjectionsDiffer is returned by VerifyProjections when a fresh
	// rebuild gives different digests than the live projections.
	ErrProjectionsDiffer = errors.New("projection digests differ")
	// ErrDirNotEmpty is returned by Rebuild when the target directory
	// exists and holds files.
	ErrDirNotEmpty = errors.New("ucl: directory is not empty")
	// ErrNoSegments is returned by Rebuild when the gateway has no segments
	// of the wallet (or of the log asked for).
	ErrNoSegments = errors.New("no ucl segments")
	// ErrAmbiguousLog is returned by Rebuild without a log id when the
	// wallet has several logs.
	ErrAmbiguousLog = errors.New("ucl: wallet has several logs")
	// ErrNoOwner is returned by Dial when no process serves the store.
	ErrNoOwner = errors.New("ucl: no owner serves this store")
	// ErrProtocol is returned by a Client when the owner's answer cannot be
	// understood.
	ErrProtocol = errors.New("ucl: bad answer from the store owner")
)

// errorCodes names the sentinel errors that keep their identity across the
// socket: the owner sends the codes of every sentinel an error matches, and
// the client's error matches the same sentinels (errors.Is), so front ends
// give the same hints and exit codes attached or not. Codes are part of the
// wire format: do not change them, only add.
var errorCodes = []struct {
	code string
	err  error
}{
	{"bad_request", ErrBadRequest},
	{"unknown_embedder", ErrUnknownEmbedder},
	{"embedder_config", ErrEmbedderConfig},
	{"no_input", ErrNoInput},
	{"no_targets", ErrNoTargets},
	{"no_document", ErrNoDocument},
	{"no_wallet", ErrNoWallet},
	{"bad_wallet", ErrBadWallet},
	{"projections_differ", ErrProjectionsDiffer},
	{"dir_not_empty", ErrDirNotEmpty},
	{"no_segments", ErrNoSegments},
	{"ambiguous_log", ErrAmbiguousLog},
	{"canceled", context.Canceled},
	{"deadline", context.DeadlineExceeded},
	{"store_not_initialized", store.ErrNotInitialized},
	{"store_exists", store.ErrExists},
	{"wrong_vault_key", store.ErrWrongVaultKey},
	{"ingest_bad_input", ingest.ErrBadInput},
	{"log_malformed", log.ErrMalformed},
	{"log_unknown_type", log.ErrUnknownType},
	{"log_unsupported_version", log.ErrUnsupportedVersion},
	{"log_chain_broken", log.ErrChainBroken},
	{"log_checksum", log.ErrChecksum},
	{"log_torn", log.ErrTorn},
	{"log_id_conflict", log.ErrIDConflict},
	{"log_locked", log.ErrLocked},
	{"log_closed", log.ErrClosed},
	{"log_not_found", log.ErrNotFound},
	{"log_no_keys", log.ErrNoKeys},
	{"log_failed", log.ErrFailed},
	{"crypto_wrong_key", crypto.ErrWrongKey},
	{"crypto_unknown_epoch", crypto.ErrUnknownEpoch},
	{"crypto_bad_key_file", crypto.ErrBadKeyFile},
	{"query_empty", query.ErrEmptyQuery},
	{"query_bad_budget", query.ErrBadBudget},
	{"query_bad_k", query.ErrBadK},
	{"query_bad_mode", query.ErrBadMode},
	{"query_bad_format", query.ErrBadFormat},
	{"query_bad_filter", query.ErrBadFilter},
	{"query_bad_time_range", query.ErrBadTimeRange},
	{"query_no_source", query.ErrNoSource},
	{"timelines_not_found", timelines.ErrNotFound},
	{"projections_unknown", projections.ErrUnknownProjection},
	{"vector_embedder", vector.ErrEmbedder},
	{"snapshot_none", snapshot.ErrNoSnapshot},
	{"snapshot_corrupt", snapshot.ErrCorrupt},
	{"snapshot_foreign", snapshot.ErrForeign},
	{"snapshot_ahead", snapshot.ErrAhead},
	{"snapshot_diverged", snapshot.ErrDiverged},
	{"snapshot_key", snapshot.ErrKey},
	{"snapshot_incompatible", snapshot.ErrIncompatible},
	{"snapshot_embedder", snapshot.ErrEmbedder},
	{"arweave_not_found", arweave.ErrNotFound},
	{"arweave_timeout", arweave.ErrTimeout},
	{"arweave_unavailable", arweave.ErrUnavailable},
	{"arweave_rejected", arweave.ErrRejected},
	{"arweave_graphql", arweave.ErrGraphQL},
	{"not_anchored", ErrNotAnchored},
	{"checkpoint_diverged", ErrCheckpointDiverged},
	{"proof_rejected", ErrProofRejected},
	{"history_rewritten", ErrHistoryRewritten},
	{"checkpoint_hidden", ErrCheckpointHidden},
	{"log_bad_proof", log.ErrBadProof},
	{"arweave_tx_signature", arweave.ErrTxSignature},
	{"log_inconsistent", log.ErrInconsistent},
	{"arweave_tx_pending", arweave.ErrTxPending},
	{"no_match", ErrNoMatch},
	{"unknown_item", ErrUnknownItem},
	{"item_tombstoned", ErrTombstoned},
	{"edit_chunk", ErrEditChunk},
	{"bad_address", ErrBadAddress},
	{"no_grantee_key", ErrNoGranteeKey},
	{"empty_scope", ErrEmptyScope},
	{"unknown_grant", ErrUnknownGrant},
	{"share_rejected", ErrShareRejected},
	{"not_for_this_wallet", crypto.ErrNotForThisWallet},
	{"arweave_disclosure", mirror.ErrDisclosure},
	{"log_shredded", log.ErrShredded},
	{"rotation_needs_key", ErrRotationNeedsKey},
	{"bad_rotate_journal", ErrBadRotateJournal},
	{"key_outside_store", ErrKeyOutsideStore},
	{"log_too_large", log.ErrTooLarge},
	{"vault_key_sealed", crypto.ErrSealed},
	{"bad_passphrase", crypto.ErrBadPassphrase},
	{"owner_running", ErrOwnerRunning},
}

// ErrorCodes returns the wire codes of the sentinels err matches.
func ErrorCodes(err error) []string {
	var out []string
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			out = append(out, c.code)
		}
	}
	return out
}

// wireError is an error as it crosses the socket.
type wireError struct {
	Message string   `json:"message"`
	Codes   []string `json:"codes,omitempty"`
	// Corruption carries a *log.CorruptionError's position.
	Corruption *wireCorruption `json:"corruption,omitempty"`
}

type wireCorruption struct {
	Seq     uint64 `json:"seq"`
	Segment string `json:"segment"`
	Offset  int64  `json:"offset"`
	Err     string `json:"err"`
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Message: err.Error(), Codes: ErrorCodes(err)}
	var ce *log.CorruptionError
	if errors.As(err, &ce) {
		w.Corruption = &wireCorruption{Seq: ce.Seq, Segment: ce.Segment, Offset: ce.Offset, Err: ce.Err.Error()}
	}
	return w
}

// RemoteError is an error returned by the store's owner, received by a
// Client. Its message is the owner's, and it matches (errors.Is) the same
// sentinel errors the owner's error matched.
type RemoteError struct {
	w *wireError
}

func (e *RemoteError) Error() string { return e.w.Message }

// Is reports whether the owner's error matched target.
func (e *RemoteError) Is(target error) bool {
	for _, c := range errorCodes {
		if c.err == target {
			for _, have := range e.w.Codes {
				if have == c.code {
					return true
				}
			}
			return false
		}
	}
	return false
}

// As fills a *log.CorruptionError from the owner's error.
func (e *RemoteError) As(target any) bool {
	if t, ok := target.(**log.CorruptionError); ok && e.w.Corruption != nil {
		c := e.w.Corruption
		*t = &log.CorruptionError{Seq: c.Seq, Segment: c.Segment, Offset: c.Offset, Err: &RemoteError{&wireError{Message: c.Err, Codes: e.w.Codes}}}
		return true
	}
	return false
}

func fromWire(w *wireError) error {
	if w == nil {
		return nil
	}
	return &RemoteError{w: w}
}

// Store errors, re-exported so front ends need not import the store layout.
var (
	// ErrNotInitialized is returned when the directory holds no store.
	ErrNotInitialized = store.ErrNotInitialized
	// ErrExists is returned by Init and Rebuild when the directory already
	// holds a store.
	ErrExists = store.ErrExists
	// ErrWrongVaultKey is returned when the vault key given does not
	// belong to the store.
	ErrWrongVaultKey = store.ErrWrongVaultKey
)

// ParseTime parses a request time: RFC 3339, a date (2023-05-08) or unix
// milliseconds; it returns unix milliseconds.
func ParseTime(s string) (int64, error) { return ingest.ParseTime(s) }

// ErrBadInput is returned by Append when a JSONL line is not a valid event
// (a *ingest.LineError names the line and field).
var ErrBadInput = ingest.ErrBadInput

// ValidateJSONL parses a JSONL input the way Append does, without writing.
func ValidateJSONL(jsonl string, chunkTokens int) error {
	_, err := ingest.ReadAll(strings.NewReader(jsonl), ingest.Options{ChunkTokens: chunkTokens})
	return err
}
