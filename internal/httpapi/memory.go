package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// memoryPreamble opens the injected system message.
const memoryPreamble = "Memory from ucl: earlier turns of this conversation and related stored items that the messages below do not contain. Use them when they are relevant."

// memory assembles the memory of one request with the engine's context
// assembly (ucl.API.Context, the same packing as `ucl context` and
// uc_context) under MaxContextTokens, the preamble included: the session's
// last RecencyWindow turns, then up to SimilarityTopK ranked chunks,
// leaving out every item whose text the request carries. It returns ""
// when there is nothing to add.
func (s *Server) memory(ctx context.Context, session, query string, carried []string) (string, int, error) {
	budget := s.opts.MaxContextTokens - textutil.EstimateTokens(memoryPreamble+"\n")
	if budget <= 0 {
		return "", 0, nil
	}
	req := ucl.ContextRequest{SearchRequest: ucl.SearchRequest{Text: query, K: s.opts.SimilarityTopK, Session: session, TZ: s.opts.TZ},
		Budget: budget, Recent: s.opts.RecencyWindow, Exclude: carried}
	res, err := s.api.Context(ctx, req)
	if errors.Is(err, timelines.ErrNotFound) && req.Recent > 0 {
		// A new session has no recent turns yet: ranked items only.
		req.Recent = 0
		res, err = s.api.Context(ctx, req)
	}
	if err != nil {
		return "", 0, fmt.Errorf("assemble memory: %w", err)
	}
	if len(res.Recent) == 0 && len(res.Included) == 0 && len(res.Trimmed) == 0 {
		return "", 0, nil
	}
	m := memoryPreamble + "\n" + res.Context
	return m, textutil.EstimateTokens(m), nil
}

// injectSystem returns body with a system message holding content spliced
// into its "messages" array, after the leading system and developer
// messages. Every other byte of body is kept as it was.
func injectSystem(body []byte, content string) ([]byte, error) {
	start, end, err := topLevelValue(body, "messages")
	if err != nil {
		return nil, err
	}
	msg, err := marshal(map[string]string{"role": "system", "content": content})
	if err != nil {
		return nil, err
	}
	arr := body[start:end]
	dec := json.NewDecoder(bytes.NewReader(arr))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New(`"messages" is not an array`)
	}
	at, tail := -1, -1 // insert before element at, or after the last element ending at tail
	for dec.More() {
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
		elEnd := int(dec.InputOffset())
		var m struct {
			Role string `json:"role"`
		}
		json.Unmarshal(el, &m) // a message that is not an object is not a leading system message
		if m.Role != "system" && m.Role != "developer" {
			at = elEnd - len(el)
			break
		}
		tail = elEnd
	}
	var out bytes.Buffer
	out.Grow(len(body) + len(msg) + 1)
	switch {
	case at >= 0:
		out.Write(body[:start+at])
		out.Write(msg)
		out.WriteByte(',')
		out.Write(body[start+at:])
	case tail >= 0:
		out.Write(body[:start+tail])
		out.WriteByte(',')
		out.Write(msg)
		out.Write(body[start+tail:])
	default:
		open := bytes.IndexByte(arr, '[')
		out.Write(body[:start+open+1])
		out.Write(msg)
		out.Write(body[start+open+1:])
	}
	return out.Bytes(), nil
}

// topLevelValue returns where the value of key sits in the JSON object body.
func topLevelValue(body []byte, key string) (start, end int, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, 0, errors.New("the body is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, 0, err
		}
		if k == key {
			end = int(dec.InputOffset())
			return end - len(v), end, nil
		}
	}
	return 0, 0, fmt.Errorf("no %q field", key)
}

// marshal encodes v without escaping <, > and & (the memory is XML-like
// text; escaping it would only make it longer).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// injectUser returns body with content prepended to the message at index
// idx of its "messages" array: before a string content (with a blank
// line), or as a first text part of an array content. Every other byte of
// body is kept as it was.
func injectUser(body []byte, idx int, content string) ([]byte, error) {
	start, end, err := topLevelValue(body, "messages")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body[start:end]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New(`"messages" is not an array`)
	}
	for i := 0; dec.More(); i++ {
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
		if i != idx {
			continue
		}
		elStart := start + int(dec.InputOffset()) - len(el)
		cs, ce, err := topLevelValue(el, "content")
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", idx, err)
		}
		raw := el[cs:ce]
		var val []byte
		var text string
		switch {
		case json.Unmarshal(raw, &text) == nil:
			if val, err = marshal(content + "\n\n" + text); err != nil {
				return nil, err
			}
		case raw[0] == '[':
			part, err := marshal(map[string]string{"type": "text", "text": content})
			if err != nil {
				return nil, err
			}
			rest := bytes.TrimSpace(raw[1:])
			val = append([]byte{'['}, part...)
			if rest[0] != ']' {
				val = append(val, ',')
			}
			val = append(val, raw[1:]...)
		default:
			return nil, fmt.Errorf("message %d: content is neither a string nor an array", idx)
		}
		var out bytes.Buffer
		out.Write(body[:elStart+cs])
		out.Write(val)
		out.Write(body[elStart+ce:])
		return out.Bytes(), nil
	}
	return nil, fmt.Errorf("no message %d", idx)
}
