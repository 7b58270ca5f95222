package ucl

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/log"
)

// ErrOutcomeUnknown is returned by a Client when the connection to the
// owner broke after the request was sent and before its answer was read
// (the owner was killed, or its answer was cut): the owner may or may not
// have applied the request. It is never "nothing was written": a refused
// connection (OwnerGone) is the only failure that proves that. An
// *OutcomeUnknownError carries what FindEvents needs to find out.
var ErrOutcomeUnknown = errors.New("ucl: outcome unknown")

// OutcomeUnknownError is an ErrOutcomeUnknown of one request.
type OutcomeUnknownError struct {
	Method string
	// Events are the events an Append or Remember would write, in order,
	// with their ids: the Client gives an id to each event that had none
	// (a random one, as the owner would), so that every event of the
	// request can be looked up in the log afterwards. Empty for other
	// methods.
	Events []EventResult
	Err    error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("%s: the connection to the store owner broke after the request was sent, before its answer (%v): whether it was applied is unknown", e.Method, e.Err)
}

// Is makes the error match ErrOutcomeUnknown.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Unwrap returns the transport's error.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// sendError classifies a failed round trip: a failed dial sent nothing
// (the error stays as it is; OwnerGone recognises it), anything later may
// have reached the owner.
func sendError(ctx context.Context, method string, err error) error {
	var op *net.OpError
	if (errors.As(err, &op) && op.Op == "dial") || ctx.Err() != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return &OutcomeUnknownError{Method: method, Err: err}
}

// withEvents attaches the request's events to an outcome-unknown error.
func withEvents(err error, evs []EventResult) error {
	var ue *OutcomeUnknownError
	if errors.As(err, &ue) {
		ue.Events = evs
	}
	return err
}

// randomID returns a fresh event id, as the log draws one for an event
// without an id.
func randomID() string {
	var id log.ID
	rand.Read(id[:])
	return id.String()
}

// appendIDs gives every line of jsonl without an "id" a random one and
// returns the new input with the events it holds (their ids, and chunk
// ids for store events). An id changes nothing else: an event without an
// id gets a random one in the log anyway. A line that does not parse is
// left alone (the owner reports it); then events is nil.
func appendIDs(jsonl string, chunkTokens int) (string, []EventResult) {
	lines := strings.Split(jsonl, "\n")
	for i, raw := range lines {
		ln := bytes.TrimSpace([]byte(raw))
		if len(ln) == 0 || ln[0] != '{' {
			continue
		}
		var probe struct {
			ID *json.RawMessage `json:"id"`
		}
		if json.Unmarshal(ln, &probe) != nil || probe.ID != nil {
			continue
		}
		rest := bytes.TrimSpace(ln[1:])
		sep := ","
		if len(rest) > 0 && rest[0] == '}' {
			sep = ""
		}
		lines[i] = `{"id":"` + randomID() + `"` + sep + string(rest)
	}
	out := strings.Join(lines, "\n")
	entries, err := ingest.ReadAll(strings.NewReader(out), ingest.Options{ChunkTokens: chunkTokens})
	if err != nil {
		return jsonl, nil
	}
	return out, eventsOf(entries)
}

// rememberIDs gives req an id when it has none and returns the events
// Remember writes for it (ingest.StoreEntries, as Store.Remember calls it).
func rememberIDs(req RememberRequest) (RememberRequest, []EventResult) {
	if req.ID == "" {
		req.ID = randomID()
	}
	kind := req.Kind
	if req.Tool != nil && kind == "" {
		kind = "tool_call"
	}
	if kind == "" {
		kind = "conversation"
	}
	k, err := log.ParseKind(kind)
	id := ingest.EventID(req.ID)
	if err != nil || id.IsZero() {
		return req, nil
	}
	tokens := req.ChunkTokens
	if tokens <= 0 {
		tokens = DefaultChunkTokens
	}
	st := &log.Store{Kind: k, Session: req.Session, Role: req.Role, Content: req.Content, Meta: req.Meta,
		Parent: req.Parent, ChunkID: req.ChunkID, Tool: req.Tool, Supersedes: req.Supersedes}
	return req, eventsOf(ingest.StoreEntries(st, id, tokens))
}

func eventsOf(entries []log.Entry) []EventResult {
	out := make([]EventResult, len(entries))
	for i, e := range entries {
		out[i].ID = e.ID
		if st, ok := e.Body.(*log.Store); ok {
			out[i].ChunkID, out[i].ChunkParent = st.ChunkID, st.ChunkParent
		}
	}
	return out
}

// Outcome is what FindEvents found of a request whose outcome was
// unknown.
type Outcome struct {
	// Written are the events found in the log, with their seq and hash.
	Written []EventResult `json:"written"`
	// Missing are the events not in the log: not written (or, for an
	// Append, not written because they duplicate a live item).
	Missing []EventResult `json:"missing"`
}

// FindEvents looks the events of an outcome-unknown request up in the
// log of api, which the caller attached to (or opened) after the error:
// the owner whose connection broke is then gone (a dead owner's writes
// are complete before the next one takes the store lock). A Store looks
// each id up; a Client scans the log's headers (ReplayRequest.Raw).
func FindEvents(ctx context.Context, api API, evs []EventResult) (*Outcome, error) {
	if len(evs) == 0 {
		return nil, fmt.Errorf("find events: %w", ErrNoInput)
	}
	found := map[log.ID]EventResult{}
	if s, ok := api.(*Store); ok {
		for _, e := range evs {
			seq, ok, err := s.st.Log.Lookup(e.ID)
			if err != nil {
				return nil, fmt.Errorf("find events: %w", err)
			}
			if !ok {
				continue
			}
			h, err := s.st.Log.HashAt(seq)
			if err != nil {
				return nil, fmt.Errorf("find events: %w", err)
			}
			found[e.ID] = EventResult{Seq: seq, Hash: h}
		}
	} else {
		want := make(map[log.ID]bool, len(evs))
		for _, e := range evs {
			want[e.ID] = true
		}
		err := api.Replay(ctx, ReplayRequest{Raw: true}, func(b json.RawMessage) error {
			var r rawEvent
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%v: %w", err, ErrProtocol)
			}
			if want[r.ID] {
				found[r.ID] = EventResult{Seq: r.Seq, Hash: r.Hash}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("find events: %w", err)
		}
	}
	out := &Outcome{Written: []EventResult{}, Missing: []EventResult{}}
	for _, e := range evs {
		if f, ok := found[e.ID]; ok {
			e.Seq, e.Hash = f.Seq, f.Hash
			out.Written = append(out.Written, e)
		} else {
			out.Missing = append(out.Missing, e)
		}
	}
	return out, nil
}
