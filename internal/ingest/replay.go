package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/unlimitedcontext/ucl/log"
)

// Replay lines. A line that `ucl replay` printed (it has "seq" and
// "hash") is appended as the event it describes: the same event id (so
// appending it again is idempotent), the same append time and the same
// body — store, tool call, edit or tombstone. The fields that belong to
// the source log (seq, hash, prev) are read and not kept; the new log
// chains the events anew. A store whose content the replay withheld
// (a tombstoned chunk without --include-tombstoned) cannot be
// reproduced and is skipped, and so are the chunk targets of a
// tombstone that name only such chunks (a tombstone left with no target
// is skipped). An edit's prev_seq names a seq of the source log; when
// lines before it were skipped it is lowered by their number, so that
// a replay from seq 1 appended into a new store (`ucl replay | ucl
// append`) names the seq that event gets there, and appending the same
// input again builds the same events (idempotent). Appended into a store
// that already holds events, an edit's prev_seq keeps the source's
// numbering: `ucl get --history` then cannot walk back past it.
// share_grant, share_revoke and rekey lines carry key material a replay
// does not print: they are skipped. A --raw replay line has no body and
// is an error.

// replayState carries what a replay stream needs across lines.
type replayState struct {
	seqs     map[uint64]uint64 // source seq -> seq in a new store
	withheld map[string]bool   // chunk ids whose store was skipped
	Skipped  int               // replay lines skipped
}

type replayLine struct {
	Seq  *uint64 `json:"seq"`
	Time string  `json:"time"`
	Type string  `json:"type"`
	ID   string  `json:"id"`
	Hash string  `json:"hash"`
	Prev string  `json:"prev"`
	// store and edit
	ChunkID     string            `json:"chunk_id"`
	Session     string            `json:"session"`
	Role        string            `json:"role"`
	Kind        string            `json:"kind"`
	ContentTime string            `json:"content_time"`
	Content     *string           `json:"content"`
	Meta        map[string]string `json:"meta"`
	Parent      string            `json:"parent"`
	ChunkParent string            `json:"chunk_parent"`
	ChunkIndex  *int              `json:"chunk_index"`
	Tool        *log.ToolCall     `json:"tool"`
	Supersedes  []string          `json:"supersedes"`
	Tombstoned  bool              `json:"tombstoned"`
	TombBy      uint64            `json:"tombstoned_by_seq"`
	// edit
	Target  string   `json:"target"`
	PrevSeq uint64   `json:"prev_seq"`
	By      string   `json:"by"`
	Removes []string `json:"removes"`
	// tombstone
	Chunks []string `json:"chunks"`
	From   int64    `json:"from_ms"`
	To     int64    `json:"to_ms"`
	Reason string   `json:"reason"`
	// --raw lines
	KeyEpoch *uint32 `json:"key_epoch"`
	Bytes    *int    `json:"body_bytes"`
}

// isReplayLine reports whether b looks like a line of `ucl replay`.
func isReplayLine(b []byte) bool {
	if !bytes.Contains(b, []byte(`"seq"`)) || !bytes.Contains(b, []byte(`"hash"`)) {
		return false
	}
	var probe struct {
		Seq  *uint64 `json:"seq"`
		Hash string  `json:"hash"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.Seq != nil && probe.Hash != ""
}

// parseReplayLine turns one replay line into entries (none when skipped).
func parseReplayLine(b []byte, lineNo int, st *replayState) ([]log.Entry, error) {
	fail := func(field string, err error) error {
		return &LineError{Line: lineNo, Field: field, Err: fmt.Errorf("%w: %v", ErrBadInput, err)}
	}
	var probe struct {
		Type     string  `json:"type"`
		KeyEpoch *uint32 `json:"key_epoch"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fail("", fmt.Errorf("not a replay line: %v", err))
	}
	if probe.KeyEpoch != nil {
		return nil, fail("", errors.New("a --raw replay line has no body to append: replay without --raw"))
	}
	switch probe.Type {
	case "share_grant", "share_revoke", "rekey":
		st.Skipped++
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ln replayLine
	if err := dec.Decode(&ln); err != nil {
		if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
			return nil, fail(strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`), errors.New("unknown field of a replay line"))
		}
		return nil, fail("", fmt.Errorf("not a replay line: %v", err))
	}
	id, err := log.ParseID(ln.ID)
	if err != nil || id.IsZero() {
		return nil, fail("id", errors.New("want the 32 hex digits of the event id"))
	}
	at, err := ParseTime(ln.Time)
	if err != nil {
		return nil, fail("time", err)
	}
	emit := func(body log.Body) []log.Entry {
		st.seqs[*ln.Seq] = *ln.Seq - uint64(min(st.Skipped, int(*ln.Seq)))
		return []log.Entry{{ID: id, Time: at, Body: body}}
	}
	skip := func() []log.Entry { st.Skipped++; return nil }
	store := func() (*log.Store, error) {
		if ln.Content == nil {
			return nil, fail("content", errors.New("missing"))
		}
		kind, err := log.ParseKind(ln.Kind)
		if err != nil {
			return nil, fail("kind", err)
		}
		t, err := ParseTime(ln.ContentTime)
		if err != nil {
			return nil, fail("content_time", err)
		}
		s := &log.Store{ChunkID: ln.ChunkID, Kind: kind, Session: ln.Session, Role: ln.Role, Content: *ln.Content,
			Meta: ln.Meta, Parent: ln.Parent, ChunkParent: ln.ChunkParent, Time: t, Tool: ln.Tool, Supersedes: ln.Supersedes}
		if ln.ChunkIndex != nil {
			s.ChunkIndex = *ln.ChunkIndex
		}
		if err := s.Validate(); err != nil {
			return nil, fail("", err)
		}
		return s, nil
	}
	switch ln.Type {
	case "store":
		if ln.Tombstoned && ln.Content == nil {
			st.withheld[ln.ChunkID] = true
			return skip(), nil
		}
		s, err := store()
		if err != nil {
			return nil, err
		}
		return emit(s), nil
	case "edit":
		if ln.Tombstoned && ln.Content == nil {
			st.withheld[ln.ChunkID] = true
			return skip(), nil
		}
		s, err := store()
		if err != nil {
			return nil, err
		}
		prev := ln.PrevSeq
		if p, ok := st.seqs[prev]; ok {
			prev = p
		}
		return emit(&log.Edit{Target: ln.Target, Prev: prev, By: ln.By, Removes: ln.Removes, Store: *s}), nil
	case "tombstone":
		var chunks []string
		for _, c := range ln.Chunks {
			if !st.withheld[c] {
				chunks = append(chunks, c)
			}
		}
		from, to := ln.From, ln.To
		if len(chunks) == 0 && ln.Session == "" && from == 0 && to == 0 {
			return skip(), nil
		}
		return emit(&log.Tombstone{Chunks: chunks, Session: ln.Session, From: from, To: to, Reason: ln.Reason}), nil
	}
	return nil, fail("type", fmt.Errorf("unknown event type %q", ln.Type))
}

// parse parses one line of a stream: a replay line with the stream's
// state (replayed true), any other with ParseLine, counting its entries.
func (st *replayState) parse(b []byte, lineNo int, o Options) (es []log.Entry, replayed bool, err error) {
	if utf8.Valid(b) && isReplayLine(b) {
		es, err = parseReplayLine(b, lineNo, st)
		return es, true, err
	}
	es, err = ParseLine(b, lineNo, o)
	return es, false, err
}
