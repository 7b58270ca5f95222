package ucl

import (
	"context"
	"errors"
	"strings"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/consolidate"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/timelines"
	"github.com/unlimitedcontext/ucl/proof"
	"github.com/unlimitedcontext/ucl/query"
	"github.com/unlimitedcontext/ucl/rotate"
	"github.com/unlimitedcontext/ucl/share"
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
	code  string
	err   error
	class Class
}{
	{"bad_request", ErrBadRequest, ClassBadRequest},
	{"unknown_embedder", ErrUnknownEmbedder, ClassBadRequest},
	{"embedder_config", ErrEmbedderConfig, ClassBadRequest},
	{"no_input", ErrNoInput, ClassBadRequest},
	{"no_targets", ErrNoTargets, ClassBadRequest},
	{"no_document", ErrNoDocument, ClassNotFound},
	{"no_wallet", ErrNoWallet, ClassUnavailable},
	{"bad_wallet", ErrBadWallet, ClassUnavailable},
	{"projections_differ", ErrProjectionsDiffer, ClassConflict},
	{"dir_not_empty", ErrDirNotEmpty, ClassConflict},
	{"no_segments", ErrNoSegments, ClassNotFound},
	{"ambiguous_log", ErrAmbiguousLog, ClassBadRequest},
	{"canceled", context.Canceled, ClassUnavailable},
	{"deadline", context.DeadlineExceeded, ClassUnavailable},
	{"store_not_initialized", store.ErrNotInitialized, ClassNotFound},
	{"store_exists", store.ErrExists, ClassConflict},
	{"wrong_vault_key", store.ErrWrongVaultKey, ClassForbidden},
	{"ingest_bad_input", ingest.ErrBadInput, ClassBadRequest},
	{"log_malformed", log.ErrMalformed, ClassInternal},
	{"log_unknown_type", log.ErrUnknownType, ClassInternal},
	{"log_unsupported_version", log.ErrUnsupportedVersion, ClassInternal},
	{"log_chain_broken", log.ErrChainBroken, ClassInternal},
	{"log_checksum", log.ErrChecksum, ClassInternal},
	{"log_torn", log.ErrTorn, ClassInternal},
	{"log_id_conflict", log.ErrIDConflict, ClassConflict},
	{"log_locked", log.ErrLocked, ClassUnavailable},
	{"log_closed", log.ErrClosed, ClassUnavailable},
	{"not_replicated", log.ErrNotReplicated, ClassUnavailable},
	{"log_not_found", log.ErrNotFound, ClassNotFound},
	{"log_no_keys", log.ErrNoKeys, ClassForbidden},
	{"log_failed", log.ErrFailed, ClassUnavailable},
	{"log_not_written", log.ErrNotWritten, ClassUnavailable},
	{"crypto_wrong_key", crypto.ErrWrongKey, ClassForbidden},
	{"crypto_unknown_epoch", crypto.ErrUnknownEpoch, ClassInternal},
	{"crypto_bad_key_file", crypto.ErrBadKeyFile, ClassInternal},
	{"query_empty", query.ErrEmptyQuery, ClassBadRequest},
	{"query_bad_budget", query.ErrBadBudget, ClassBadRequest},
	{"query_bad_k", query.ErrBadK, ClassBadRequest},
	{"query_bad_mode", query.ErrBadMode, ClassBadRequest},
	{"query_bad_format", query.ErrBadFormat, ClassBadRequest},
	{"query_bad_filter", query.ErrBadFilter, ClassBadRequest},
	{"query_bad_time_range", query.ErrBadTimeRange, ClassBadRequest},
	{"query_no_source", query.ErrNoSource, ClassInternal},
	{"timelines_not_found", timelines.ErrNotFound, ClassNotFound},
	{"projections_unknown", projections.ErrUnknownProjection, ClassBadRequest},
	{"vector_embedder", vector.ErrEmbedder, ClassUnavailable},
	{"snapshot_none", snapshot.ErrNoSnapshot, ClassNotFound},
	{"snapshot_corrupt", snapshot.ErrCorrupt, ClassInternal},
	{"snapshot_foreign", snapshot.ErrForeign, ClassConflict},
	{"snapshot_ahead", snapshot.ErrAhead, ClassConflict},
	{"snapshot_diverged", snapshot.ErrDiverged, ClassConflict},
	{"snapshot_key", snapshot.ErrKey, ClassForbidden},
	{"snapshot_incompatible", snapshot.ErrIncompatible, ClassConflict},
	{"snapshot_embedder", snapshot.ErrEmbedder, ClassConflict},
	{"arweave_not_found", arweave.ErrNotFound, ClassNotFound},
	{"arweave_timeout", arweave.ErrTimeout, ClassUnavailable},
	{"arweave_unavailable", arweave.ErrUnavailable, ClassUnavailable},
	{"arweave_rejected", arweave.ErrRejected, ClassUnavailable},
	{"arweave_graphql", arweave.ErrGraphQL, ClassUnavailable},
	{"not_anchored", proof.ErrNotAnchored, ClassNotFound},
	{"checkpoint_diverged", proof.ErrCheckpointDiverged, ClassConflict},
	{"proof_rejected", proof.ErrProofRejected, ClassConflict},
	{"history_rewritten", proof.ErrHistoryRewritten, ClassConflict},
	{"checkpoint_hidden", proof.ErrCheckpointHidden, ClassConflict},
	{"log_bad_proof", log.ErrBadProof, ClassBadRequest},
	{"arweave_tx_signature", arweave.ErrTxSignature, ClassConflict},
	{"log_inconsistent", log.ErrInconsistent, ClassConflict},
	{"arweave_tx_pending", arweave.ErrTxPending, ClassUnavailable},
	{"no_match", ErrNoMatch, ClassNotFound},
	{"unknown_item", ErrUnknownItem, ClassNotFound},
	{"item_tombstoned", ErrTombstoned, ClassConflict},
	{"edit_chunk", ErrEditChunk, ClassBadRequest},
	{"bad_address", share.ErrBadAddress, ClassBadRequest},
	{"no_grantee_key", share.ErrNoGranteeKey, ClassNotFound},
	{"empty_scope", share.ErrEmptyScope, ClassBadRequest},
	{"unknown_grant", share.ErrUnknownGrant, ClassNotFound},
	{"share_rejected", share.ErrShareRejected, ClassConflict},
	{"not_for_this_wallet", crypto.ErrNotForThisWallet, ClassForbidden},
	{"arweave_disclosure", mirror.ErrDisclosure, ClassConflict},
	{"log_shredded", log.ErrShredded, ClassNotFound},
	{"rotation_needs_key", rotate.ErrNeedsKey, ClassForbidden},
	{"bad_rotate_journal", rotate.ErrBadJournal, ClassInternal},
	{"key_outside_store", rotate.ErrKeyOutsideStore, ClassBadRequest},
	{"outcome_unknown", ErrOutcomeUnknown, ClassUnavailable},
	{"log_document_too_large", log.ErrDocumentTooLarge, ClassBadRequest},
	{"log_too_large", log.ErrTooLarge, ClassBadRequest},
	{"no_model", consolidate.ErrNoModel, ClassUnavailable},
	{"model_failed", consolidate.ErrUpstream, ClassUnavailable},
	{"model_malformed", consolidate.ErrMalformed, ClassUnavailable},
	{"model_partial", consolidate.ErrPartial, ClassUnavailable},
	{"cannot_pay", ErrCannotPay, ClassForbidden},
	{"bundler_payment_required", arweave.ErrPaymentRequired, ClassForbidden},
	{"bundler_answer", arweave.ErrBundlerAnswer, ClassUnavailable},
	{"arweave_endpoint", arweave.ErrEndpoint, ClassBadRequest},
	{"vault_key_sealed", crypto.ErrSealed, ClassForbidden},
	{"bad_passphrase", crypto.ErrBadPassphrase, ClassForbidden},
	{"owner_running", ErrOwnerRunning, ClassConflict},
}

// Class groups errors by what the caller can do about them. Each face maps
// a class to its own form (an HTTP status, an exit code, an MCP tool error)
// and adds its own hint; none re-derives a class from codes or messages.
// Class names are part of the wire format: do not change them.
type Class string

// The classes. Every sentinel in errorCodes has one; an error that matches
// none is ClassInternal.
const (
	// ClassBadRequest is the class of errors returned when the request
	// itself is wrong: fix it and retry.
	ClassBadRequest Class = "bad_request"
	// ClassNotFound is the class of errors returned when what the request
	// names does not exist (or no longer does).
	ClassNotFound Class = "not_found"
	// ClassConflict is the class of errors returned when the request
	// contradicts the store's state (an id reused with other content, a
	// diverged history, a tombstoned item).
	ClassConflict Class = "conflict"
	// ClassForbidden is the class of errors returned when a key or
	// identity the request needs is missing or wrong.
	ClassForbidden Class = "forbidden"
	// ClassUnavailable is the class of errors returned when a resource the
	// request needs (a gateway, the store lock, an embedder, time) is not
	// there now: retrying later may succeed.
	ClassUnavailable Class = "unavailable"
	// ClassInternal is the class of every other error: damage or a bug.
	ClassInternal Class = "internal"
)

// ClassOf returns err's class: that of the first sentinel in the code
// table err matches whose class is not ClassInternal, else ClassInternal.
// An error received from the owner keeps the class the owner gave it.
func ClassOf(err error) Class {
	if err == nil {
		return ""
	}
	var re *RemoteError
	if errors.As(err, &re) && re.w.Class != "" && re.w.Class != ClassInternal {
		return re.w.Class
	}
	for _, c := range errorCodes {
		if c.class != ClassInternal && errors.Is(err, c.err) {
			return c.class
		}
	}
	return ClassInternal
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
	Class   Class    `json:"class,omitempty"`
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
	w := &wireError{Message: err.Error(), Class: ClassOf(err), Codes: ErrorCodes(err)}
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
// (a *LineError names the line and field).
var ErrBadInput = ingest.ErrBadInput

// LineError is the error (wrapped with ErrBadInput) that names a bad JSONL
// line, counted from 1 in the input Append or ValidateJSONL was given, and
// its field. A caller that splits a larger input into batches adds the
// batch's offset to Line.
type LineError = ingest.LineError

// ValidateJSONL parses a JSONL input the way Append does, without writing.
func ValidateJSONL(jsonl string, chunkTokens int) error {
	_, err := ingest.ReadAll(strings.NewReader(jsonl), ingest.Options{ChunkTokens: chunkTokens})
	return err
}
