package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stdioSession is a server on StdioTransport over pipes, driven line by
// line as a client process would drive `ucl mcp`.
type stdioSession struct {
	t   *testing.T
	in  *io.PipeWriter
	out chan string // the lines answered, read as they come as a process's stdout pipe would take them
	err error       // why out was closed
}

func startStdio(t *testing.T, e *env, at time.Time) *stdioSession {
	t.Helper()
	srv := New(e.store, Options{Log: e.log, Now: func() time.Time { return at }, Version: "test"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := srv.Run(ctx, StdioTransport(inR, outW, 1<<20))
		outW.CloseWithError(fmt.Errorf("the server ended: %v", err))
		done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		<-done
	})
	s := &stdioSession{t: t, in: inW, out: make(chan string, 1000)}
	go func() {
		br := bufio.NewReaderSize(outR, 1<<16)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				s.err = err
				close(s.out)
				return
			}
			s.out <- strings.TrimSuffix(line, "\n")
		}
	}()
	return s
}

func (s *stdioSession) send(line string) {
	s.t.Helper()
	if os.Getenv("DBG") != "" {
		fmt.Fprintf(os.Stderr, "SEND %.200s\n", line)
	}
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("send %.80q: %v", line, err)
	}
}

func (s *stdioSession) recv() string {
	s.t.Helper()
	line, ok := <-s.out
	if !ok {
		s.t.Fatalf("read an answer: %v", s.err)
	}
	if os.Getenv("DBG") != "" {
		fmt.Fprintf(os.Stderr, "RECV %.200s\n", line)
	}
	return line
}

const pingLine = `{"jsonrpc":"2.0","id":"sync","method":"ping"}`

// TestStdioMalformedLines: each line that is not a JSON-RPC message gets
// the specification's error and the session goes on (issue 29 item 6:
// `ucl mcp` exited without an answer on 8 of 15 such lines).
func TestStdioMalformedLines(t *testing.T) {
	e := newEnv(t)
	s := startStdio(t, e, now)
	huge := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"uc_store","arguments":{"content":"` + strings.Repeat("x", 2<<20) + `"}}}`
	for _, c := range []struct {
		name, line string
		code       int
		id         string
	}{
		{"not json", `{not json}`, -32700, "null"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, "null"},
		{"empty array", `[]`, -32600, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, "null"},
		{"scalar", `42`, -32600, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
		{"no method, no id", `{"jsonrpc":"2.0"}`, -32600, "null"},
		{"longer than the bound", huge, -32600, "null"},
		{"deep nesting", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), -32700, "null"},
	} {
		s.send(c.line)
		var got struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		line := s.recv()
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("%s: answer %q: %v", c.name, line, err)
		}
		if got.Error.Code != c.code || string(got.ID) != c.id {
			t.Errorf("%s: answer %s; want code %d, id %s", c.name, line, c.code, c.id)
		}
		// Still serving.
		s.send(pingLine)
		if line := s.recv(); line != `{"jsonrpc":"2.0","id":"sync","result":{}}` {
			t.Fatalf("%s: the session did not go on: %s", c.name, line)
		}
	}
	if strings.Contains(e.log.String(), strings.Repeat("x", 100)) {
		t.Error("the long line reached the log")
	}
}

// TestStdioTranscript is a golden MCP session: testdata/transcript.txt
// holds blocks of lines sent, "----", and the exact lines answered.
// UCL_UPDATE_GOLDEN=1 rewrites the answers.
func TestStdioTranscript(t *testing.T) {
	e := newEnv(t)
	s := startStdio(t, e, now)
	path := filepath.Join("testdata", "transcript.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseTranscript(string(data))
	var out strings.Builder
	for i, b := range blocks {
		out.WriteString(b.comments)
		for _, l := range b.send {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n")
		got := s.exchange(b.send)
		for _, l := range got {
			out.WriteString(l + "\n")
		}
		if i < len(blocks)-1 {
			out.WriteString("\n")
		}
		if os.Getenv("UCL_UPDATE_GOLDEN") == "" && strings.Join(got, "\n") != strings.Join(b.want, "\n") {
			t.Errorf("block %d (%.80s): got\n%s\nwant\n%s", i+1, b.send[0], strings.Join(got, "\n"), strings.Join(b.want, "\n"))
		}
	}
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type transcriptBlock struct {
	comments   string
	send, want []string
}

// parseTranscript reads blocks separated by blank lines: "#" comment
// lines, the lines to send, "----", the lines answered.
func parseTranscript(s string) []transcriptBlock {
	var out []transcriptBlock
	for _, chunk := range strings.Split(strings.TrimSpace(s), "\n\n") {
		var b transcriptBlock
		after := false
		for _, l := range strings.Split(chunk, "\n") {
			switch {
			case l == "----":
				after = true
			case after:
				b.want = append(b.want, l)
			case strings.HasPrefix(l, "#"):
				b.comments += l + "\n"
			default:
				b.send = append(b.send, l)
			}
		}
		out = append(out, b)
	}
	return out
}

// exchange sends lines and returns every line answered until the answers
// to every request sent; when no line is a request (notifications, bad
// lines), until the answer to a ping sent after them. (A ping cannot
// follow every block: the server holds requests between initialize and
// notifications/initialized.)
func (s *stdioSession) exchange(lines []string) []string {
	s.t.Helper()
	want := map[string]bool{}
	for _, l := range lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Method != "" && len(m.ID) > 0 && checkLine([]byte(l), false, 1<<20) == nil {
			want[string(m.ID)] = true
		}
		s.send(l)
	}
	synced := len(want) > 0
	if !synced {
		s.send(pingLine)
	}
	var got []string
	for !synced || len(want) > 0 {
		l := s.recv()
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(l), &m)
		if string(m.ID) == `"sync"` {
			synced = true
			continue
		}
		delete(want, string(m.ID))
		got = append(got, l)
	}
	return got
}

// FuzzFilterLines: whatever comes on stdin, filterLines passes on only
// lines the SDK decodes as one message, answers the others with a
// parse or invalid-request error, and never holds a line over the bound.
func FuzzFilterLines(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		"{not json}\n[]\n42\n\n\r\n",
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}` + "\r\n" + `{"jsonrpc":"1.0","id":"x"}`,
		strings.Repeat("[", 300) + "\n",
		`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + strings.Repeat("x", 200),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var good, bad strings.Builder
		if err := filterLines(strings.NewReader(string(in)), &good, &bad, 128); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(good.String(), "\n"), "\n") {
			if l == "" {
				continue
			}
			if len(l) > 128 {
				t.Fatalf("passed a line of %d bytes over the bound", len(l))
			}
			if checkLine([]byte(l), false, 128) != nil {
				t.Fatalf("passed a bad line %q", l)
			}
		}
		for _, l := range strings.Split(strings.TrimSuffix(bad.String(), "\n"), "\n") {
			if l == "" {
				continue
			}
			var m struct {
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil || (m.Error.Code != -32700 && m.Error.Code != -32600) {
				t.Fatalf("answer %q: %v", l, err)
			}
		}
	})
}
