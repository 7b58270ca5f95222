// Package ingest turns user input (JSONL lines, CLI flags) into log entries.
//
// JSONL line (one event per line; blank lines and lines starting with '#'
// are skipped):
//
//	{"type":"store","session":"s1","role":"user","kind":"conversation",
//	 "content":"…","meta":{"k":"v"},"time":"2023-05-08T13:56:00Z",
//	 "id":"…","chunk_id":"…","parent":"…"}
//	{"type":"tombstone","chunks":["…"],"session":"s1","from":"…","to":"…","reason":"…"}
//	{"type":"tool_call","name":"get_weather","args":{"city":"Berlin"},"result":"22C",
//	 "status":"ok","parent":"<message id>","session":"s1","role":"tool","time":"…","id":"…"}
//
// A store line may carry "supersedes":["<item id>", …] (live items, or
// items earlier in the same input). A tool_call line is a store of kind
// tool_call with the tool fields of store body v2: "name" is required,
// "args" is any JSON value (kept byte for byte), "result" the output
// (may be absent: the call is stored before its result), "parent" the
// message that triggered it; a long result is chunked like a document.
//
// "allow_duplicate": true on a store line writes it even when its text
// duplicates a live item (see package ucl); ReadAllFlags reports it.
// "type" defaults to "store", "kind" to "conversation". "id" is the
// idempotency key: 32 hex digits are used as the event id as they are; any
// other string is hashed to one (SHA-256, first 16 bytes), so re-appending a
// line with the same "id" and content returns the original seq. Times are
// RFC 3339, a date (2006-01-02, UTC), or unix milliseconds. Unknown fields
// are an error (a typo must not silently drop data). share_grant,
// share_revoke and rekey events are made by `ucl share` and `ucl keys`, not
// from JSONL, because they carry key material.
package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/unlimitedcontext/ucl/log"
)

// ErrBadInput is returned (wrapped in a *LineError) for a line that cannot
// become an event.
var ErrBadInput = errors.New("ingest: bad input")

// LineError names the input line and field at fault.
type LineError struct {
	Line  int
	Field string
	Err   error
}

func (e *LineError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("line %d: field %q: %v", e.Line, e.Field, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

type line struct {
	Type        string            `json:"type"`
	ID          string            `json:"id"`
	Session     string            `json:"session"`
	Role        string            `json:"role"`
	Kind        string            `json:"kind"`
	Content     *string           `json:"content"`
	Meta        map[string]string `json:"meta"`
	Time        json.RawMessage   `json:"time"`
	ChunkID     string            `json:"chunk_id"`
	Parent      string            `json:"parent"`
	ChunkParent string            `json:"chunk_parent"`
	ChunkIndex  *int              `json:"chunk_index"`
	Chunks      []string          `json:"chunks"`
	From        json.RawMessage   `json:"from"`
	To          json.RawMessage   `json:"to"`
	Reason      string            `json:"reason"`
	// AllowDuplicate is read by ReadAllFlags (see there).
	AllowDuplicate bool     `json:"allow_duplicate"`
	Supersedes     []string `json:"supersedes"`
	// tool_call lines
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Result *string         `json:"result"`
	Status string          `json:"status"`
}

// Options tune parsing.
type Options struct {
	ChunkTokens int // chunk size for documents and tool calls (default log.DefaultChunkTokens)
}

func newReplayState(Options) *replayState {
	return &replayState{seqs: map[uint64]uint64{}, withheld: map[string]bool{}}
}

// EventID turns a user-supplied id into an event id (see the package doc).
func EventID(s string) log.ID {
	if id, err := log.ParseID(s); err == nil {
		return id
	}
	h := sha256.Sum256([]byte("ucl event id v1\x00" + s))
	var id log.ID
	copy(id[:], h[:16])
	return id
}

// ParseTime parses RFC 3339, a date (UTC) or unix milliseconds into unix ms.
func ParseTime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty time")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("cannot parse time %q: use RFC 3339 (2023-05-08T13:56:00Z), a date (2023-05-08) or unix milliseconds", s)
}

func rawTime(r json.RawMessage) (int64, error) {
	if len(r) == 0 || string(r) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err == nil {
		return ParseTime(s)
	}
	var n int64
	if err := json.Unmarshal(r, &n); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("want a time string or unix milliseconds")
}

// ParseLine parses one JSONL line into entries (a long document becomes
// several chunk entries).
func ParseLine(b []byte, lineNo int, o Options) ([]log.Entry, error) {
	fail := func(field string, err error) error {
		return &LineError{Line: lineNo, Field: field, Err: fmt.Errorf("%w: %v", ErrBadInput, err)}
	}
	if !utf8.Valid(b) {
		return nil, fail("", fmt.Errorf("invalid UTF-8 at byte %d of the line: the input must be UTF-8 text (nothing is replaced silently)", invalidUTF8At(b)))
	}
	if isReplayLine(b) {
		return parseReplayLine(b, lineNo, newReplayState(o))
	}
	if key, err := duplicateKey(b); err != nil {
		return nil, fail("", fmt.Errorf("not a JSON object: %v", err))
	} else if key != "" {
		return nil, fail(key, errors.New("given twice on the line (which one is meant?)"))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ln line
	if err := dec.Decode(&ln); err != nil {
		field := ""
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, fail(ute.Field, fmt.Errorf("want a %s, got a JSON %s", ute.Type, ute.Value))
		}
		if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
			field = strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
			return nil, fail(field, errors.New("unknown field"))
		}
		return nil, fail(field, fmt.Errorf("not a JSON object: %v", err))
	}
	if dec.More() {
		return nil, fail("", errors.New("more than one JSON value on the line"))
	}
	if n := replacedRunes(b, &ln); n > 0 {
		// encoding/json turns a lone UTF-16 surrogate escape (\ud800) into
		// U+FFFD; stored, it would not be what was sent.
		return nil, fail("", errors.New("a \\u escape is not a valid character (a lone UTF-16 surrogate?)"))
	}
	var id log.ID
	if ln.ID != "" {
		id = EventID(ln.ID)
		if id.IsZero() {
			return nil, fail("id", errors.New("the all-zero id is reserved (it means \"no id\", which would turn idempotency off)"))
		}
	}
	if ln.Type != "tool_call" {
		for _, f := range [...]struct {
			name string
			set  bool
		}{{"name", ln.Name != ""}, {"args", ln.Args != nil}, {"result", ln.Result != nil}, {"status", ln.Status != ""}} {
			if f.set {
				return nil, fail(f.name, errors.New("only a tool_call line has it"))
			}
		}
	}
	switch ln.Type {
	case "tool_call":
		return toolCallEntries(&ln, id, o, fail)
	case "", "store":
		if ln.Content == nil || strings.TrimSpace(*ln.Content) == "" {
			return nil, fail("content", errors.New("missing or empty"))
		}
		kind, err := log.ParseKind(ln.Kind)
		if err != nil {
			return nil, fail("kind", errors.New("want conversation, document, knowledge or tool_call"))
		}
		if log.CheckRole(ln.Role) != nil {
			return nil, fail("role", fmt.Errorf("%q: want user, assistant, system, developer or tool", ln.Role))
		}
		t, err := rawTime(ln.Time)
		if err != nil {
			return nil, fail("time", err)
		}
		for k := range ln.Meta {
			if k == "" {
				return nil, fail("meta", errors.New("empty key"))
			}
		}
		s := &log.Store{ChunkID: ln.ChunkID, Kind: kind, Session: ln.Session, Role: ln.Role, Content: *ln.Content,
			Meta: ln.Meta, Parent: ln.Parent, ChunkParent: ln.ChunkParent, Time: t, Supersedes: ln.Supersedes}
		if err := s.Validate(); err != nil {
			return nil, fail("", err)
		}
		if ln.ChunkIndex != nil {
			if *ln.ChunkIndex < 0 {
				return nil, fail("chunk_index", errors.New("negative"))
			}
			s.ChunkIndex = *ln.ChunkIndex
		}
		if err := docSized(s, fail); err != nil {
			return nil, err
		}
		return sized(StoreEntries(s, id, o.ChunkTokens), fail)
	case "tombstone":
		from, err := rawTime(ln.From)
		if err != nil {
			return nil, fail("from", err)
		}
		to, err := rawTime(ln.To)
		if err != nil {
			return nil, fail("to", err)
		}
		if (from != 0 || to != 0) && to <= from {
			return nil, fail("to", errors.New("a time range needs both from and to, with to after from"))
		}
		if len(ln.Chunks) == 0 && ln.Session == "" && from == 0 {
			return nil, fail("chunks", errors.New("a tombstone needs chunks, a session or a from/to range"))
		}
		return []log.Entry{{ID: id, Body: &log.Tombstone{Chunks: ln.Chunks, Session: ln.Session, From: from, To: to, Reason: ln.Reason}}}, nil
	case "share_grant", "share_revoke", "rekey":
		return nil, fail("type", fmt.Errorf("%s events carry key material and are made by `ucl share` / `ucl keys`, not from JSONL", ln.Type))
	default:
		return nil, fail("type", fmt.Errorf("unknown type %q: want store, tool_call or tombstone", ln.Type))
	}
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// replacedRunes counts the U+FFFD in the decoded strings of ln that the
// line itself does not spell (literally or as \ufffd): replacements made by
// the JSON decoder.
func replacedRunes(b []byte, ln *line) int {
	n := 0
	count := func(s string) { n += strings.Count(s, "\uFFFD") }
	if ln.Content != nil {
		count(*ln.Content)
	}
	if ln.Result != nil {
		count(*ln.Result)
	}
	for _, s := range append([]string{ln.Type, ln.ID, ln.Session, ln.Role, ln.Kind, ln.ChunkID, ln.Parent, ln.ChunkParent, ln.Reason,
		ln.Name, ln.Status, string(ln.Args)}, ln.Supersedes...) {
		count(s)
	}
	for k, v := range ln.Meta {
		count(k)
		count(v)
	}
	for _, c := range ln.Chunks {
		count(c)
	}
	if n == 0 {
		return 0
	}
	spelled := bytes.Count(b, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(b), []byte(`\ufffd`))
	return n - spelled
}

// duplicateKey returns the first key that an object of the JSON value b
// gives twice ("meta.k" for nested objects). encoding/json keeps the last
// silently.
func duplicateKey(b []byte) (string, error) {
	if json.Valid(b) {
		if k, ok := duplicateKeyValid(b); ok {
			return k, nil
		}
	}
	return duplicateKeyTokens(b)
}

// duplicateKeyTokens is duplicateKey by encoding/json's tokens: it also
// says what is wrong with input that is no JSON.
func duplicateKeyTokens(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var walk func(path string) (string, error)
	walk = func(path string) (string, error) {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", err
				}
				k, _ := kt.(string)
				name := k
				if path != "" {
					name = path + "." + k
				}
				if seen[k] {
					return name, nil
				}
				seen[k] = true
				if d, err := walk(name); d != "" || err != nil {
					return d, err
				}
			}
			_, err = dec.Token()
			return "", err
		case json.Delim('['):
			for dec.More() {
				if d, err := walk(path); d != "" || err != nil {
					return d, err
				}
			}
			_, err = dec.Token()
			return "", err
		}
		return "", nil
	}
	return walk("")
}

// duplicateKeyValid is duplicateKey for b that json.Valid accepts, by one
// pass over the bytes (the token walk cost a third of parsing a line);
// ok is false for a key with an escape (\u0061 is "a") or a non-ASCII
// byte, which duplicateKeyTokens compares decoded.
func duplicateKeyValid(b []byte) (key string, ok bool) {
	i := 0
	space := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	// str returns the string starting at b[i] (a quote) without its
	// quotes, and whether it holds an escape or a non-ASCII byte (decoding
	// turns each invalid UTF-8 byte into U+FFFD: different bytes, same key).
	str := func() ([]byte, bool) {
		start, esc := i+1, false
		for i++; b[i] != '"'; i++ {
			if b[i] == '\\' {
				esc = true
				i++
			} else if b[i] >= utf8.RuneSelf {
				esc = true
			}
		}
		i++
		return b[start : i-1], esc
	}
	var value func(path string) (string, bool)
	value = func(path string) (string, bool) {
		space()
		switch b[i] {
		case '{':
			i++
			var seen [][]byte
			for {
				space()
				if b[i] == '}' {
					i++
					return "", true
				}
				if b[i] == ',' {
					i++
					space()
				}
				k, esc := str()
				if esc {
					return "", false
				}
				name := string(k)
				if path != "" {
					name = path + "." + name
				}
				for _, s := range seen {
					if bytes.Equal(s, k) {
						return name, true
					}
				}
				seen = append(seen, k)
				space()
				i++ // ':'
				if d, ok := value(name); d != "" || !ok {
					return d, ok
				}
			}
		case '[':
			i++
			for {
				space()
				if b[i] == ']' {
					i++
					return "", true
				}
				if b[i] == ',' {
					i++
				}
				if d, ok := value(path); d != "" || !ok {
					return d, ok
				}
			}
		case '"':
			str()
		default: // number, true, false, null
			for i < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[i])) {
				i++
			}
		}
		return "", true
	}
	return value("")
}

// StoreEntries chunks a store body if needed and gives each chunk an event
// id derived from id (when set), so re-appending a chunked document is
// idempotent too.
func StoreEntries(s *log.Store, id log.ID, chunkTokens int) []log.Entry {
	if s.ChunkParent != "" || (s.Kind != log.KindDocument && s.Kind != log.KindToolCall) {
		return []log.Entry{{ID: id, Body: s}}
	}
	parent := s.ChunkID
	if parent == "" {
		if !id.IsZero() {
			parent = id.String()
		} else {
			var r log.ID
			copyRandom(r[:])
			parent = r.String()
		}
	}
	chunks := log.Chunk(s, parent, chunkTokens)
	if len(chunks) == 1 {
		return []log.Entry{{ID: id, Body: chunks[0]}}
	}
	out := make([]log.Entry, len(chunks))
	for i, c := range chunks {
		if i > 0 {
			c.Tool, c.Supersedes = nil, nil // the first chunk carries them
		}
		var cid log.ID
		if !id.IsZero() {
			cid = EventID(fmt.Sprintf("%s#%d", id, i))
		}
		out[i] = log.Entry{ID: cid, Body: c}
	}
	return out
}

// ReadAll parses every line of r. It stops at the first bad line: the
// caller appends nothing unless the whole input is good.
func ReadAll(r io.Reader, o Options) ([]log.Entry, error) {
	var out []log.Entry
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	rs := newReplayState(o)
	for i, ln := range bytes.Split(data, []byte("\n")) {
		ln = bytes.TrimSpace(ln)
		if len(ln) == 0 || ln[0] == '#' {
			continue
		}
		es, _, err := rs.parse(ln, i+1, o)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// toolCallEntries builds the store body of a tool_call line.
func toolCallEntries(ln *line, id log.ID, o Options, fail func(string, error) error) ([]log.Entry, error) {
	if strings.TrimSpace(ln.Name) == "" {
		return nil, fail("name", errors.New("a tool call needs a name"))
	}
	if ln.Content != nil {
		return nil, fail("content", errors.New("a tool call's output is its \"result\""))
	}
	if ln.Kind != "" && ln.Kind != "tool_call" {
		return nil, fail("kind", errors.New("a tool call is of kind tool_call"))
	}
	t, err := rawTime(ln.Time)
	if err != nil {
		return nil, fail("time", err)
	}
	role := ln.Role
	if role == "" {
		role = "tool"
	}
	if log.CheckRole(role) != nil {
		return nil, fail("role", fmt.Errorf("%q: want user, assistant, system, developer or tool", ln.Role))
	}
	s := &log.Store{ChunkID: ln.ChunkID, Kind: log.KindToolCall, Session: ln.Session, Role: role, Meta: ln.Meta,
		Parent: ln.Parent, Time: t, Supersedes: ln.Supersedes,
		Tool: &log.ToolCall{Name: ln.Name, Args: string(ln.Args), Status: ln.Status}}
	if ln.Result != nil {
		s.Content = *ln.Result
	}
	if ln.ChunkParent != "" || ln.ChunkIndex != nil {
		return nil, fail("chunk_parent", errors.New("a tool call is chunked by ucl, not by hand"))
	}
	if err := s.Validate(); err != nil {
		return nil, fail("", err)
	}
	if err := docSized(s, fail); err != nil {
		return nil, err
	}
	return sized(StoreEntries(s, id, o.ChunkTokens), fail)
}

// docSized refuses an item that is split into chunks (a document, a tool
// call) over the log's document bound (log.MaxDocumentSize), before it is
// split: splitting costs time with the text.
func docSized(s *log.Store, fail func(string, error) error) error {
	if s.ChunkParent != "" || (s.Kind != log.KindDocument && s.Kind != log.KindToolCall) {
		return nil
	}
	if err := log.CheckDocumentSize(s); err != nil {
		le := fail("content", err).(*LineError)
		le.Err = fmt.Errorf("%w: %w (split the text into several documents)", ErrBadInput, err)
		return le
	}
	return nil
}

// sized refuses entries over the log's event bound (log.MaxEventSize).
func sized(es []log.Entry, fail func(string, error) error) ([]log.Entry, error) {
	for _, e := range es {
		if err := log.CheckSize(e.Body); err != nil {
			if errors.Is(err, log.ErrTooLarge) {
				// Both sentinels: bad input, and which rule it broke.
				le := fail("content", err).(*LineError)
				le.Err = fmt.Errorf("%w: %w (store long text as a document, kind \"document\", which is split into chunks)", ErrBadInput, err)
				return nil, le
			}
			return nil, fail("", err)
		}
	}
	return es, nil
}
