// Package importer reads the conversation exports of other assistants
// into ucl sessions: ChatGPT's conversations.json (Settings → Data
// controls → Export data) and Claude's conversations.json (Settings →
// Privacy → Export data).
//
// Formats (only the fields read are listed; others are ignored):
//
// ChatGPT: a JSON array of conversations
//
//	{"id"|"conversation_id": "…", "title": "…", "create_time": 1700000000.5,
//	 "current_node": "<node id>",
//	 "mapping": {"<node id>": {"id": "…", "parent": "<node id>"|null, "children": […],
//	     "message": null | {"id": "…", "author": {"role": "user"|"assistant"|"system"|"tool"},
//	        "create_time": 1700000000.5 | null,
//	        "content": {"content_type": "text"|"multimodal_text"|"code"|…,
//	                    "parts": ["…", {…}], "text": "…"},
//	        "metadata": {"is_visually_hidden_from_conversation": true}}}}}
//
// The messages form a tree (every regenerated answer or edited question
// is a branch); the conversation the user kept is the path from the root
// to current_node, which is what is imported, in that order. Messages
// without text (string parts, or "text"), system messages and those
// hidden from the conversation are skipped. A message without a time
// takes the last time seen (else the conversation's).
//
// Claude: a JSON array of conversations
//
//	{"uuid": "…", "name": "…", "created_at": "2024-05-01T10:00:00.000000Z",
//	 "chat_messages": [{"uuid": "…", "sender": "human"|"assistant",
//	     "created_at": "…", "text": "…", "content": [{"type": "text", "text": "…"}]}]}
//
// A message's text is "text", else its text content blocks joined by a
// blank line; messages without text are skipped.
//
// Each conversation becomes one session, "chatgpt-<id>" or
// "claude-<uuid>"; each message one conversation turn (user or
// assistant; ChatGPT tool messages keep the role "tool") with its time,
// meta source, conversation title and message id, and an event id
// derived from the source and message id, so importing the same export
// again stores nothing new. Input is read as a stream, one conversation
// at a time; MaxConversationBytes bounds one conversation and
// MaxMessages its messages.
package importer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Limits.
const (
	// MaxConversationBytes bounds the JSON of one conversation.
	MaxConversationBytes = 256 << 20
	// MaxMessages bounds the messages of one conversation (and the
	// nodes of a ChatGPT tree).
	MaxMessages = 200_000
)

// ErrFormat is returned (wrapped) when the input is not an export of the
// expected format; the message names the conversation and field.
var ErrFormat = errors.New("importer: not the expected export format")

// Message is one imported turn.
type Message struct {
	ID      string // the message id in the export
	Role    string // user, assistant or tool
	Content string
	Time    int64 // unix ms
}

// Conversation is one imported conversation, its kept messages in order.
type Conversation struct {
	Source   string // chatgpt or claude
	ID       string
	Title    string
	Time     int64 // unix ms of its start
	Messages []Message
}

// Session is the ucl session of c.
func (c *Conversation) Session() string { return c.Source + "-" + c.ID }

// JSONL renders c as `ucl append` lines: one store per message, with an
// idempotency id and allow_duplicate (two turns of a conversation may say
// the same thing).
func (c *Conversation) JSONL() (string, error) {
	var b strings.Builder
	for _, m := range c.Messages {
		meta := map[string]string{"source": c.Source, "message_id": m.ID}
		if c.Title != "" {
			meta["title"] = c.Title
		}
		line, err := json.Marshal(struct {
			ID             string            `json:"id"`
			Session        string            `json:"session"`
			Role           string            `json:"role"`
			Content        string            `json:"content"`
			Meta           map[string]string `json:"meta"`
			Time           int64             `json:"time"`
			AllowDuplicate bool              `json:"allow_duplicate"`
		}{c.Source + ":" + c.ID + ":" + m.ID, c.Session(), m.Role, m.Content, meta, m.Time, true})
		if err != nil {
			return "", fmt.Errorf("encode message %q: %w", m.ID, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// eachObject decodes the elements of the top-level JSON array of r one
// at a time into a fresh *T and calls fn with it.
func eachObject[T any](r io.Reader, fn func(i int, v *T) error) error {
	br := bufio.NewReader(r)
	dec := json.NewDecoder(br)
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%w: want a JSON array of conversations", ErrFormat)
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := decodeBounded(dec, &raw); err != nil {
			return fmt.Errorf("%w: conversation %d: %v", ErrFormat, i+1, err)
		}
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%w: conversation %d: %v", ErrFormat, i+1, err)
		}
		if err := fn(i, v); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return nil
}

// decodeBounded decodes the next value of dec, failing when it is larger
// than MaxConversationBytes.
func decodeBounded(dec *json.Decoder, raw *json.RawMessage) error {
	start := dec.InputOffset()
	if err := dec.Decode(raw); err != nil {
		return err
	}
	if dec.InputOffset()-start > MaxConversationBytes {
		return fmt.Errorf("larger than %d bytes", MaxConversationBytes)
	}
	return nil
}

// ---- ChatGPT ----

type gptConv struct {
	ID             string             `json:"id"`
	ConversationID string             `json:"conversation_id"`
	Title          string             `json:"title"`
	CreateTime     *float64           `json:"create_time"`
	CurrentNode    string             `json:"current_node"`
	Mapping        map[string]gptNode `json:"mapping"`
}

type gptNode struct {
	ID      string      `json:"id"`
	Parent  *string     `json:"parent"`
	Message *gptMessage `json:"message"`
}

type gptMessage struct {
	ID     string `json:"id"`
	Author struct {
		Role string `json:"role"`
	} `json:"author"`
	CreateTime *float64 `json:"create_time"`
	Content    struct {
		ContentType string            `json:"content_type"`
		Parts       []json.RawMessage `json:"parts"`
		Text        string            `json:"text"`
	} `json:"content"`
	Metadata struct {
		Hidden bool `json:"is_visually_hidden_from_conversation"`
	} `json:"metadata"`
}

func unixMS(f *float64) (int64, bool) {
	if f == nil || math.IsNaN(*f) || math.IsInf(*f, 0) || *f < 0 || *f > 1e11 {
		return 0, false
	}
	return int64(math.Round(*f * 1000)), true
}

// ChatGPT reads a ChatGPT conversations.json and calls fn with each
// conversation (the branch kept, see the package doc).
func ChatGPT(r io.Reader, fn func(*Conversation) error) error {
	return eachObject(r, func(i int, g *gptConv) error {
		c := &Conversation{Source: "chatgpt", ID: g.ID, Title: g.Title}
		if c.ID == "" {
			c.ID = g.ConversationID
		}
		if c.ID == "" {
			return fmt.Errorf("%w: conversation %d: no id", ErrFormat, i+1)
		}
		if len(g.Mapping) > MaxMessages {
			return fmt.Errorf("%w: conversation %q: %d nodes, more than %d", ErrFormat, c.ID, len(g.Mapping), MaxMessages)
		}
		c.Time, _ = unixMS(g.CreateTime)
		// The kept branch: current_node up to the root, then reversed.
		node := g.CurrentNode
		if node == "" {
			node = lastLeaf(g.Mapping)
		}
		var path []*gptMessage
		seen := map[string]bool{}
		for node != "" {
			n, ok := g.Mapping[node]
			if !ok {
				return fmt.Errorf("%w: conversation %q: node %q is not in the mapping", ErrFormat, c.ID, node)
			}
			if seen[node] {
				return fmt.Errorf("%w: conversation %q: the message tree has a cycle at %q", ErrFormat, c.ID, node)
			}
			seen[node] = true
			if n.Message != nil {
				path = append(path, n.Message)
			}
			node = ""
			if n.Parent != nil {
				node = *n.Parent
			}
		}
		last := c.Time
		for j := len(path) - 1; j >= 0; j-- {
			m := path[j]
			role := m.Author.Role
			if role == "system" || m.Metadata.Hidden || (role != "user" && role != "assistant" && role != "tool") {
				continue
			}
			text := gptText(m)
			if strings.TrimSpace(text) == "" {
				continue
			}
			if t, ok := unixMS(m.CreateTime); ok {
				last = t
			}
			id := m.ID
			if id == "" {
				return fmt.Errorf("%w: conversation %q: a message without an id", ErrFormat, c.ID)
			}
			c.Messages = append(c.Messages, Message{ID: id, Role: role, Content: text, Time: last})
		}
		return fn(c)
	})
}

// gptText is a message's text: its string parts joined by a blank line,
// else its "text" (code, execution output).
func gptText(m *gptMessage) string {
	var parts []string
	for _, p := range m.Content.Parts {
		var s string
		if json.Unmarshal(p, &s) == nil && strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n\n")
	}
	return m.Content.Text
}

// lastLeaf picks, when an export has no current_node, the leaf whose
// message is the latest (ties: the smallest node id), so the choice is
// deterministic.
func lastLeaf(mapping map[string]gptNode) string {
	isParent := map[string]bool{}
	for _, n := range mapping {
		if n.Parent != nil {
			isParent[*n.Parent] = true
		}
	}
	best, bestT := "", int64(-1)
	for id, n := range mapping {
		if isParent[id] {
			continue
		}
		t := int64(0)
		if n.Message != nil {
			t, _ = unixMS(n.Message.CreateTime)
		}
		if t > bestT || (t == bestT && id < best) {
			best, bestT = id, t
		}
	}
	return best
}

// ---- Claude ----

type claudeConv struct {
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	CreatedAt string `json:"created_at"`
	Messages  []struct {
		UUID      string `json:"uuid"`
		Sender    string `json:"sender"`
		CreatedAt string `json:"created_at"`
		Text      string `json:"text"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"chat_messages"`
}

func parseISO(s string) (int64, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// Claude reads a Claude conversations.json and calls fn with each
// conversation.
func Claude(r io.Reader, fn func(*Conversation) error) error {
	return eachObject(r, func(i int, cc *claudeConv) error {
		if cc.UUID == "" {
			return fmt.Errorf("%w: conversation %d: no uuid", ErrFormat, i+1)
		}
		if len(cc.Messages) > MaxMessages {
			return fmt.Errorf("%w: conversation %q: %d messages, more than %d", ErrFormat, cc.UUID, len(cc.Messages), MaxMessages)
		}
		c := &Conversation{Source: "claude", ID: cc.UUID, Title: cc.Name}
		c.Time, _ = parseISO(cc.CreatedAt)
		last := c.Time
		for _, m := range cc.Messages {
			role := map[string]string{"human": "user", "assistant": "assistant"}[m.Sender]
			if role == "" {
				continue
			}
			text := m.Text
			if strings.TrimSpace(text) == "" {
				var parts []string
				for _, b := range m.Content {
					if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
						parts = append(parts, b.Text)
					}
				}
				text = strings.Join(parts, "\n\n")
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
			if m.UUID == "" {
				return fmt.Errorf("%w: conversation %q: a message without a uuid", ErrFormat, cc.UUID)
			}
			if t, ok := parseISO(m.CreatedAt); ok {
				last = t
			}
			c.Messages = append(c.Messages, Message{ID: m.UUID, Role: role, Content: text, Time: last})
		}
		return fn(c)
	})
}
