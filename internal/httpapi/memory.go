package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// memoryPreamble opens the injected system message.
const memoryPreamble = "Memory from ucl: earlier turns of this conversation and related stored items that the messages below do not contain. Use them when they are relevant."

// memItem is one piece of memory to inject.
type memItem struct {
	id, kind, session, role string
	time                    int64
	content                 string
}

func (it memItem) render(content string) string {
	var b strings.Builder
	b.WriteString(`<item id="`)
	b.WriteString(xmlEscape(it.id))
	b.WriteString(`" kind="`)
	b.WriteString(xmlEscape(it.kind))
	b.WriteString(`"`)
	if it.session != "" {
		b.WriteString(` session="` + xmlEscape(it.session) + `"`)
	}
	if it.role != "" {
		b.WriteString(` role="` + xmlEscape(it.role) + `"`)
	}
	if it.time != 0 {
		b.WriteString(` time="` + time.UnixMilli(it.time).UTC().Format(time.RFC3339) + `"`)
	}
	b.WriteString(">")
	b.WriteString(xmlEscape(content))
	b.WriteString("</item>")
	return b.String()
}

var xmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func xmlEscape(s string) string { return xmlReplacer.Replace(s) }

// renderMemory renders the profiles, the recent turns and the ranked items.
func renderMemory(profile, recent, ranked []string) string {
	var b strings.Builder
	b.WriteString(memoryPreamble)
	if len(profile) > 0 {
		b.WriteString("\n<profile>\n")
		for _, r := range profile {
			b.WriteString(r)
			b.WriteByte('\n')
		}
		b.WriteString("</profile>")
	}
	if len(recent) > 0 {
		b.WriteString("\n<recent_turns>\n")
		for _, r := range recent {
			b.WriteString(r)
			b.WriteByte('\n')
		}
		b.WriteString("</recent_turns>")
	}
	if len(ranked) > 0 {
		b.WriteString("\n<related>\n")
		for _, r := range ranked {
			b.WriteString(r)
			b.WriteByte('\n')
		}
		b.WriteString("</related>")
	}
	return b.String()
}

// minItemTokens is the smallest cut of an item worth injecting.
const minItemTokens = 24

// memory assembles the memory of one request under MaxContextTokens:
// the current profiles (derived memory, when the store has any), the
// session's last RecencyWindow turns (newest first, rendered in order),
// then the ranked chunks for query, leaving out every item whose text the
// request carries. It returns "" when there is nothing to add.
func (s *Server) memory(ctx context.Context, session, query string, carried map[string]bool) (string, int, error) {
	budget := s.opts.MaxContextTokens
	var profile []string
	fitsAll := func(profile, recent, ranked []string) (string, int, bool) {
		m := renderMemory(profile, recent, ranked)
		t := textutil.EstimateTokens(m)
		return m, t, t <= budget
	}
	fits := func(recent, ranked []string) (string, int, bool) { return fitsAll(profile, recent, ranked) }
	// place tries it whole, then cut to what fits; "" : it does not fit.
	place := func(it memItem, try func(string) bool) bool {
		if try(it.render(it.content)) {
			return true
		}
		words := strings.Fields(it.content)
		for n := len(words) * 3 / 4; n > 0; n = n * 3 / 4 {
			cut := strings.Join(words[:n], " ") + " […]"
			if textutil.EstimateTokens(cut) < minItemTokens {
				return false
			}
			if try(it.render(cut)) {
				return true
			}
		}
		return false
	}

	seen := map[string]bool{}
	// The profiles first: each fact in them names the turns it comes
	// from, so the model can ask for them.
	if pa, ok := s.api.(ucl.Consolidator); ok {
		pr, err := pa.Profile(ctx, ucl.ProfileRequest{})
		if err != nil {
			return "", 0, fmt.Errorf("profile: %w", err)
		}
		for _, p := range pr.Profiles {
			seen[p.ID] = true
			place(memItem{id: p.ID, kind: "profile", content: p.Content}, func(x string) bool {
				_, _, ok := fitsAll(append(profile, x), nil, nil)
				if ok {
					profile = append(profile, x)
				}
				return ok
			})
		}
	}
	var recentItems []memItem
	if s.opts.RecencyWindow > 0 {
		// One call reading only the last turns (serve owns the store: no
		// socket between).
		res, err := s.api.Session(ctx, ucl.SessionRequest{ID: session, Last: s.opts.RecencyWindow})
		switch {
		case errors.Is(err, timelines.ErrNotFound):
		case err != nil:
			return "", 0, fmt.Errorf("recent turns: %w", err)
		default:
			res.Chunks = res.Chunks[max(0, len(res.Chunks)-s.opts.RecencyWindow):]
			for _, c := range res.Chunks {
				seen[c.ID] = true
				if carried[normalize(c.Content)] {
					continue
				}
				recentItems = append(recentItems, memItem{c.ID, c.Kind.String(), "", c.Role, c.Time, c.Content})
			}
		}
	}
	// Newest first: the turns nearest the question matter most; an older
	// turn that does not fit ends the run (a gap would mislead).
	var recent []string
	for i := len(recentItems) - 1; i >= 0; i-- {
		ok := place(recentItems[i], func(r string) bool {
			_, _, ok := fits(append([]string{r}, recent...), nil)
			if ok {
				recent = append([]string{r}, recent...)
			}
			return ok
		})
		if !ok {
			break
		}
	}

	var ranked []string
	res, err := s.api.Search(ctx, ucl.SearchRequest{Text: query, K: s.opts.SimilarityTopK, Session: session})
	if err != nil {
		return "", 0, fmt.Errorf("search: %w", err)
	}
	for _, r := range res.Results {
		if seen[r.ChunkID] || carried[normalize(r.Content)] {
			continue
		}
		place(memItem{r.ChunkID, r.Kind, r.Session, r.Role, r.Time, r.Content}, func(x string) bool {
			_, _, ok := fits(recent, append(ranked, x))
			if ok {
				ranked = append(ranked, x)
			}
			return ok
		})
	}
	if len(profile) == 0 && len(recent) == 0 && len(ranked) == 0 {
		return "", 0, nil
	}
	m, t, _ := fits(recent, ranked)
	return m, t, nil
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
