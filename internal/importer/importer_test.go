package importer

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func readAll(t *testing.T, read func(r *os.File, fn func(*Conversation) error) error, path string) []*Conversation {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*Conversation
	if err := read(f, func(c *Conversation) error { out = append(out, c); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// ChatGPT: the branch the user kept (the regenerated answer left out),
// system and hidden messages skipped, image parts dropped, a tool
// message's text kept, a message without a time taking the last one.
func TestChatGPT(t *testing.T) {
	cs := readAll(t, func(r *os.File, fn func(*Conversation) error) error { return ChatGPT(r, fn) }, "testdata/chatgpt-conversations.json")
	if len(cs) != 2 {
		t.Fatalf("%d conversations", len(cs))
	}
	c := cs[0]
	if c.Session() != "chatgpt-6f1c-lisbon" || c.Title != "Lisbon trip" || c.Time != 1696406400000 {
		t.Fatalf("conversation: %+v", c)
	}
	want := []Message{
		{"u1", "user", "Find me cheap fares to Lisbon in March", 1696406460250},
		{"a1", "assistant", "TAP has fares from 89 EUR on Tuesdays in March.", 1696406480000},
		{"u2", "user", "And what is the weather like there?", 1696406520000},
		{"t2", "tool", "Lisbon in March: 17C, some rain.", 1696406530000},
		{"a2", "assistant", "Mild, around 17C, pack a rain jacket.", 1696406530000},
	}
	if !reflect.DeepEqual(c.Messages, want) {
		t.Fatalf("messages:\n%+v\nwant\n%+v", c.Messages, want)
	}
	if len(cs[1].Messages) != 3 {
		t.Fatalf("piano: %+v", cs[1].Messages)
	}
	l, err := c.JSONL()
	if err != nil || strings.Count(l, "\n") != 5 || !strings.Contains(l, `"allow_duplicate":true`) || !strings.Contains(l, `"id":"chatgpt:6f1c-lisbon:u1"`) {
		t.Fatalf("JSONL %v:\n%s", err, l)
	}
}

func TestClaude(t *testing.T) {
	cs := readAll(t, func(r *os.File, fn func(*Conversation) error) error { return Claude(r, fn) }, "testdata/claude-conversations.json")
	if len(cs) != 2 || len(cs[1].Messages) != 0 {
		t.Fatalf("%d conversations: %+v", len(cs), cs)
	}
	want := []Message{
		{"m1", "user", "My sourdough starter smells like acetone, is it dead?", 1714557605123},
		{"m2", "assistant", "No: it is hungry. Feed it twice a day at 1:1:1.", 1714557609000},
	}
	if c := cs[0]; c.Session() != "claude-3b0e8c1e-0000-4000-8000-000000000001" || c.Title != "Sourdough starter" || !reflect.DeepEqual(c.Messages, want) {
		t.Fatalf("conversation: %+v", c)
	}
}

// Bad input: a clear error naming what is wrong.
func TestBadExports(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, "want a JSON array"},
		{`[{"title":"x","mapping":{}}]`, "no id"},
		{`[{"id":"c","current_node":"n","mapping":{"n":{"id":"n","parent":"m"},"m":{"id":"m","parent":"n"}}}]`, "cycle"},
		{`[{"id":"c","current_node":"zz","mapping":{}}]`, "not in the mapping"},
		{`[{"id":"c"`, "conversation 1"},
	} {
		err := ChatGPT(strings.NewReader(tc.in), func(*Conversation) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	if err := Claude(strings.NewReader(`[{"name":"x"}]`), func(*Conversation) error { return nil }); err == nil || !strings.Contains(err.Error(), "no uuid") {
		t.Errorf("claude without uuid: %v", err)
	}
}

func FuzzChatGPT(f *testing.F) {
	if b, err := os.ReadFile("testdata/chatgpt-conversations.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`[{"id":"c","current_node":"n","mapping":{"n":{"id":"n","parent":null,"message":{"id":"n","author":{"role":"user"},"content":{"parts":["hi"]}}}}}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = ChatGPT(strings.NewReader(string(b)), func(c *Conversation) error {
			for _, m := range c.Messages {
				if strings.TrimSpace(m.Content) == "" || m.ID == "" {
					t.Fatalf("empty message kept: %+v", m)
				}
			}
			_, err := c.JSONL()
			return err
		})
	})
}

func FuzzClaude(f *testing.F) {
	if b, err := os.ReadFile("testdata/claude-conversations.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`[{"uuid":"u","chat_messages":[{"uuid":"m","sender":"human","text":"hi"}]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Claude(strings.NewReader(string(b)), func(c *Conversation) error {
			for _, m := range c.Messages {
				if strings.TrimSpace(m.Content) == "" || m.ID == "" {
					t.Fatalf("empty message kept: %+v", m)
				}
			}
			_, err := c.JSONL()
			return err
		})
	})
}
