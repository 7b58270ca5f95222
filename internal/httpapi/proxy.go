package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
)

// SessionHeader names the session of a proxied request.
const SessionHeader = "X-UCL-Session"

// chatRequest is what the proxy reads of a chat completions request; the
// body itself is forwarded as the client sent it.
type chatRequest struct {
	Messages []chatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
	User     string        `json:"user"`
	Model    string        `json:"model"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCallID is set on a tool message: the result of that call.
	ToolCallID string `json:"tool_call_id"`
}

// text returns a message's text: a string content, or the text parts of
// an array content.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" && p.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// exchange is one proxied request as the store will see it.
type exchange struct {
	session  string
	model    string
	user     string // last user message text ("" : none, nothing is stored)
	userIdx  int
	stream   bool
	tokens   int // memory tokens injected
	started  time.Time
	memory   time.Duration // spent assembling memory
	store    time.Duration // spent storing the exchange
	recorded bool
	// results are the tool messages of the request: the results of calls
	// an earlier reply made, which complete the stored (pending) calls.
	results []toolResult
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	if s.opts.Upstream == "" {
		writeError(w, http.StatusServiceUnavailable, "no_upstream", "this server has no upstream LLM configured ([proxy] upstream or --upstream)", nil)
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "decode chat completions request: "+err.Error(), nil)
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "bad_request", "the request has no messages", nil)
		return
	}
	ex := &exchange{model: req.Model, stream: req.Stream, userIdx: -1, started: time.Now()}
	ex.session = r.Header.Get(SessionHeader)
	if ex.session == "" {
		ex.session = req.User
	}
	if ex.session == "" {
		ex.session = s.opts.DefaultSession
	}
	var carried []string
	for i, m := range req.Messages {
		t := m.text()
		if strings.TrimSpace(t) != "" {
			carried = append(carried, t)
		}
		if m.Role == "user" && strings.TrimSpace(t) != "" {
			ex.user, ex.userIdx = t, i
		}
		if m.Role == "tool" && m.ToolCallID != "" && strings.TrimSpace(t) != "" {
			ex.results = append(ex.results, toolResult{callID: m.ToolCallID, text: t})
		}
	}
	if ex.user != "" {
		t0 := time.Now()
		mem, tokens, err := s.memory(r.Context(), ex.session, ex.user, carried)
		ex.memory = time.Since(t0)
		if err != nil {
			// Memory is an addition: the request still goes through.
			s.log.Warn("memory unavailable, forwarding without it", "session", ex.session, "err", err)
		} else if mem != "" {
			var spliced []byte
			if s.opts.InjectAs == InjectUser {
				spliced, err = injectUser(body, ex.userIdx, mem)
			} else {
				spliced, err = injectSystem(body, mem)
			}
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_request", "chat completions request: "+err.Error(), nil)
				return
			}
			body, ex.tokens = spliced, tokens
		}
	}
	uctx, ucancel := context.WithCancel(r.Context())
	defer ucancel()
	resp, err := s.upstream(r.WithContext(uctx), http.MethodPost, "/chat/completions", body)
	if err != nil {
		s.upstreamError(w, r, err)
		return
	}
	defer resp.Body.Close()
	resp.Body = &idleBody{ReadCloser: resp.Body, d: s.opts.UpstreamTimeout, cancel: ucancel}
	copyHeaders(w.Header(), resp.Header)
	w.Header().Set(SessionHeader, ex.session)
	w.Header().Set("X-UCL-Context-Tokens", strconv.Itoa(ex.tokens))
	switch {
	case resp.StatusCode != http.StatusOK:
		// Passed through as it is; nothing happened, nothing is stored.
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		s.relayStream(w, r, resp, ex)
	default:
		s.relayPlain(w, r, resp, ex)
	}
	s.log.Info("chat completion", "session", ex.session, "status", resp.StatusCode, "stream", ex.stream,
		"context_tokens", ex.tokens, "stored", ex.recorded, "ms", time.Since(ex.started).Milliseconds(),
		"memory_ms", ex.memory.Milliseconds(), "store_ms", ex.store.Milliseconds())
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if s.opts.Upstream == "" {
		writeError(w, http.StatusServiceUnavailable, "no_upstream", "this server has no upstream LLM configured ([proxy] upstream or --upstream)", nil)
		return
	}
	resp, err := s.upstream(r, http.MethodGet, "/models", nil)
	if err != nil {
		s.upstreamError(w, r, err)
		return
	}
	defer resp.Body.Close()
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// hopHeaders are not forwarded in either direction: they describe one
// connection, or carry the client's ucl token, or are recomputed.
var hopHeaders = map[string]bool{
	"Authorization": true, "Connection": true, "Keep-Alive": true, "Proxy-Authorization": true,
	"Proxy-Authenticate": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Host": true, "Content-Length": true, "Accept-Encoding": true, "X-Ucl-Session": true,
}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[http.CanonicalHeaderKey(k)] && k != "Content-Length" {
			continue
		}
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// upstream sends one request to the upstream LLM, with the client's
// headers (minus hopHeaders) and the upstream key.
func (s *Server) upstream(r *http.Request, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	ur, err := http.NewRequestWithContext(r.Context(), method, s.opts.Upstream+path, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		if hopHeaders[http.CanonicalHeaderKey(k)] {
			continue
		}
		ur.Header[k] = append([]string(nil), vs...)
	}
	if s.opts.UpstreamKey != "" {
		ur.Header.Set("Authorization", "Bearer "+s.opts.UpstreamKey)
	}
	return s.hc.Do(ur)
}

// upstreamError answers a failed upstream call: 504 on a timeout, 502
// otherwise, nothing when the client itself went away. The message names
// the upstream URL only, never the key.
func (s *Server) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	s.log.Warn("upstream failed", "path", r.URL.Path, "err", err)
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		writeError(w, http.StatusGatewayTimeout, "upstream_timeout", "the upstream LLM did not answer in time: "+err.Error(), nil)
		return
	}
	writeError(w, http.StatusBadGateway, "upstream_unavailable", "the upstream LLM is unreachable: "+err.Error(), nil)
}

// maxStoredText bounds the text the proxy stores of one turn (a user
// message, a reply, a tool call's arguments): the store keeps at most
// log.MaxEventSize per event, and what is left over is for the turn's
// session, ids and meta. A longer turn is still forwarded whole; its
// stored text is its first maxStoredText bytes (cut at a rune boundary)
// and truncatedMarker.
const maxStoredText = log.MaxEventSize - 64<<10

// truncatedMarker ends a stored text that was cut; %d are the bytes kept
// and the bytes the turn had.
const truncatedMarker = "\n[ucl: truncated: the first %d of %d bytes are stored]"

// maxStoredArgs bounds a tool call's stored arguments: cut, they are no
// longer JSON and are stored as a JSON string, whose escapes can take six
// bytes per byte.
const maxStoredArgs = maxStoredText / 8

// bounded is s as stored: s itself, or its first limit bytes (cut at a
// rune boundary) and truncatedMarker. total is the length s had when
// more than len(s) was seen (0: len(s)).
func bounded(s string, total, limit int) string {
	if total < len(s) {
		total = len(s)
	}
	if total <= limit {
		return s
	}
	n := min(len(s), limit)
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf(truncatedMarker, n, total)
}

// capped is text collected from a stream: at most limit bytes are kept
// (0: maxStoredText), and n counts them all, so a long reply costs
// bounded memory.
type capped struct {
	b     strings.Builder
	n     int
	limit int
}

func (c *capped) max() int {
	if c.limit > 0 {
		return c.limit
	}
	return maxStoredText
}

func (c *capped) add(s string) {
	c.n += len(s)
	if room := c.max() - c.b.Len(); room > 0 {
		c.b.WriteString(s[:min(len(s), room)])
	}
}

// String is the text as stored (bounded).
func (c *capped) String() string { return bounded(c.b.String(), c.n, c.max()) }

// errUpstreamIdle is returned by an idleBody whose upstream sent nothing
// for UpstreamTimeout.
var errUpstreamIdle = errors.New("the upstream sent nothing in time")

// idleBody cuts an upstream body off (cancels its request) when one read
// waits longer than d: headers alone do not hold the proxy forever.
type idleBody struct {
	io.ReadCloser
	d      time.Duration
	cancel context.CancelFunc
}

func (b *idleBody) Read(p []byte) (int, error) {
	t := time.AfterFunc(b.d, b.cancel)
	n, err := b.ReadCloser.Read(p)
	if !t.Stop() {
		return n, fmt.Errorf("%w (%s): %v", errUpstreamIdle, b.d, err)
	}
	return n, err
}

// maxSSEEvent bounds one SSE event the proxy buffers to parse: a longer
// one (no OpenAI event comes near it) is forwarded as it arrives, with the
// rest of the stream, and the exchange is not stored.
const maxSSEEvent = 4 << 20

// reply is the assistant's answer as stored.
type reply struct {
	content   capped
	toolCalls []*toolCall
}

type toolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	args      capped // streamed arguments, bounded (finishCalls sets Function.Arguments)
	argsTotal int    // the arguments' length when more than Function.Arguments arrived
}

// relayPlain forwards a whole (non-streamed) reply, storing the exchange
// before the client gets it.
func (s *Server) relayPlain(w http.ResponseWriter, r *http.Request, resp *http.Response, ex *exchange) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		w.Header().Del("Content-Length")
		s.upstreamError(w, r, fmt.Errorf("read upstream reply: %w", err))
		return
	}
	if len(b) > maxReplyBytes {
		// Too large to keep: forward it and store nothing.
		w.Header().Del("Content-Length")
		w.WriteHeader(resp.StatusCode)
		w.Write(b)
		io.Copy(w, resp.Body)
		return
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content   *string     `json:"content"`
				ToolCalls []*toolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(b, &out) == nil && len(out.Choices) > 0 {
		var rp reply
		if c := out.Choices[0].Message.Content; c != nil {
			rp.content.add(*c)
		}
		rp.toolCalls = out.Choices[0].Message.ToolCalls
		s.record(r, ex, &rp)
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(b)
}

// relayStream forwards an SSE reply event by event, flushing each, and
// stores the exchange when the final [DONE] event arrives, before
// forwarding it.
func (s *Server) relayStream(w http.ResponseWriter, r *http.Request, resp *http.Response, ex *exchange) {
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	rc.Flush()
	var (
		rp      reply
		pending []byte
		buf     = make([]byte, 32<<10)
	)
	calls := map[int]*toolCall{}
	passthrough := false
	for {
		n, rerr := resp.Body.Read(buf)
		if passthrough {
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
			rc.Flush()
			if rerr != nil {
				return
			}
			continue
		}
		pending = append(pending, buf[:n]...)
		// Forward every complete event; keep a partial one until its end.
		for {
			end, ok := eventEnd(pending)
			if !ok {
				break
			}
			ev := pending[:end]
			if isDone(ev) {
				finishCalls(&rp, calls)
				s.record(r, ex, &rp)
			} else {
				collectDelta(ev, &rp, calls)
			}
			if _, err := w.Write(ev); err != nil {
				return // the client went away
			}
			if err := rc.Flush(); err != nil {
				return
			}
			pending = pending[end:]
		}
		if len(pending) > maxSSEEvent {
			s.log.Warn("upstream event over the size the proxy parses: passed through, the exchange is not stored",
				"session", ex.session, "bytes", len(pending), "limit", maxSSEEvent)
			passthrough = true
			w.Write(pending)
			rc.Flush()
			pending = nil
			if rerr != nil {
				return
			}
			continue
		}
		if rerr != nil {
			if len(pending) > 0 {
				w.Write(pending)
				rc.Flush()
			}
			if !errors.Is(rerr, io.EOF) {
				s.log.Warn("upstream stream broken", "session", ex.session, "err", rerr)
			}
			return
		}
	}
}

// eventEnd returns the end of the first complete SSE event in b (after
// its terminating blank line).
func eventEnd(b []byte) (int, bool) {
	start := 0
	for {
		i := bytes.IndexByte(b[start:], '\n')
		if i < 0 {
			return 0, false
		}
		line := bytes.TrimRight(b[start:start+i], "\r")
		start += i + 1
		if len(line) == 0 {
			return start, true
		}
	}
}

// dataLines returns the payloads of an event's "data:" lines.
func dataLines(ev []byte) [][]byte {
	var out [][]byte
	for _, ln := range bytes.Split(ev, []byte("\n")) {
		ln = bytes.TrimRight(ln, "\r")
		if d, ok := bytes.CutPrefix(ln, []byte("data:")); ok {
			out = append(out, bytes.TrimSpace(d))
		}
	}
	return out
}

func isDone(ev []byte) bool {
	for _, d := range dataLines(ev) {
		if string(d) == "[DONE]" {
			return true
		}
	}
	return false
}

// collectDelta adds the first choice's delta of a chunk event to rp.
func collectDelta(ev []byte, rp *reply, calls map[int]*toolCall) {
	for _, d := range dataLines(ev) {
		var chunk struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(d, &chunk) != nil {
			continue
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			if c.Delta.Content != nil {
				rp.content.add(*c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				call := calls[tc.Index]
				if call == nil {
					call = &toolCall{args: capped{limit: maxStoredArgs}}
					calls[tc.Index] = call
				}
				if tc.ID != "" {
					call.ID = tc.ID
				}
				if tc.Type != "" {
					call.Type = tc.Type
				}
				if len(call.Function.Name) < 1024 {
					call.Function.Name += tc.Function.Name
				}
				call.args.add(tc.Function.Arguments)
			}
		}
	}
}

// finishCalls moves the streamed tool calls into rp, in index order.
func finishCalls(rp *reply, calls map[int]*toolCall) {
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		c := calls[i]
		c.Function.Arguments, c.argsTotal = c.args.b.String(), c.args.n
		rp.toolCalls = append(rp.toolCalls, c)
	}
}

// record appends the exchange to its session as one atomic batch. A
// failure is logged: the client still gets the reply it is owed.
func (s *Server) record(r *http.Request, ex *exchange, rp *reply) {
	if ex.user == "" || r.Context().Err() != nil {
		return
	}
	jsonl, err := exchangeJSONL(ex, rp)
	if err != nil {
		s.log.Error("store exchange", "session", ex.session, "err", err)
		return
	}
	// The decision to store is taken: a client leaving now must not cut
	// the append in half (it is atomic anyway) or skip it.
	t0 := time.Now()
	// A transcript keeps a turn said twice ("ok", "thanks"): near-duplicate
	// detection is for memories stored on purpose, not for what was said.
	_, err = s.api.Append(context.WithoutCancel(r.Context()), ucl.AppendRequest{JSONL: jsonl, AllowDuplicate: true})
	ex.store = time.Since(t0)
	if err != nil {
		s.log.Error("store exchange", "session", ex.session, "err", err)
		return
	}
	ex.recorded = true
	s.completeToolCalls(context.WithoutCancel(r.Context()), ex)
}

// userTurnID is the user turn's id: one message of one session stores once.
func userTurnID(session string, idx int, text string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("ucl proxy user turn\x00%s\x00%d\x00%s", session, idx, text)))
	return "u-" + hex.EncodeToString(h[:12])
}

// exchangeJSONL renders the exchange as ingest JSONL lines.
func exchangeJSONL(ex *exchange, rp *reply) (string, error) {
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	xid := hex.EncodeToString(raw[:])
	type line struct {
		Session string            `json:"session"`
		Role    string            `json:"role"`
		Kind    string            `json:"kind"`
		Content string            `json:"content"`
		ID      string            `json:"id"`
		ChunkID string            `json:"chunk_id"`
		Parent  string            `json:"parent,omitempty"`
		Meta    map[string]string `json:"meta"`
	}
	meta := map[string]string{"source": "ucl-proxy"}
	if ex.model != "" {
		meta["model"] = ex.model
	}
	uid := userTurnID(ex.session, ex.userIdx, ex.user)
	lines := []any{line{Session: ex.session, Role: "user", Kind: "conversation", Content: bounded(ex.user, 0, maxStoredText), ID: uid, ChunkID: uid, Meta: meta}}
	parent := uid
	if c := rp.content.String(); strings.TrimSpace(c) != "" {
		aid := "a-" + xid
		lines = append(lines, line{Session: ex.session, Role: "assistant", Kind: "conversation", Content: c, ID: aid, ChunkID: aid, Parent: uid, Meta: meta})
		parent = aid
	}
	for i, tc := range rp.toolCalls {
		tid := fmt.Sprintf("t-%s-%d", xid, i)
		if tc.ID != "" {
			tid = toolItemID(ex.session, tc.ID)
		}
		l, err := toolCallLine(ex.session, tid, parent, tc, meta)
		if err != nil {
			return "", err
		}
		lines = append(lines, l)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return "", err
		}
	}
	return out.String(), nil
}
