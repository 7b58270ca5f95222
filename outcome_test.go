package ucl

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// dyingOwner serves s on its socket like Serve, except that a write
// request (append, remember) is answered by a dead owner: with apply, the
// request is applied and the connection then closed before any answer
// (the owner killed after the write); without, closed before it is read.
func dyingOwner(t *testing.T, s *Store, apply bool) {
	t.Helper()
	h := Handler(s)
	ln, err := listenOwner(SocketPath(s.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/append" && r.URL.Path != "/v1/remember" {
			h.ServeHTTP(w, r)
			return
		}
		if apply {
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// Issue 29.3: a client whose owner was killed right after the write said
// "append: Post …: EOF" (and the CLI "nothing was written") although every
// event was in the log. The error must say the outcome is unknown, carry
// the ids of every event (the client gives ids to events without one),
// and FindEvents must then find exactly what was written.
func TestOwnerDiesAfterWriteOutcomeNotNothingWritten(t *testing.T) {
	ctx := context.Background()
	doc := strings.Repeat("A long document about the cutover plan. ", 200)
	for _, apply := range []bool{true, false} {
		s := newTestStore(t)
		dyingOwner(t, s, apply)
		c, err := Dial(s.Dir())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		input := testJSONL + `{"id":"given-1","session":"s3","content":"an event with its own id"}` + "\n"
		_, aerr := c.Append(ctx, AppendRequest{JSONL: input})
		_, rerr := c.Remember(ctx, RememberRequest{Content: doc, Kind: "document", ChunkTokens: 64})
		for _, err := range []error{aerr, rerr} {
			var ue *OutcomeUnknownError
			if !errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &ue) {
				t.Fatalf("apply=%v: got %v, want ErrOutcomeUnknown", apply, err)
			}
			if OwnerGone(err) {
				t.Fatalf("apply=%v: an error after sending counts as a refused connection: %v", apply, err)
			}
			if !strings.Contains(err.Error(), "unknown") {
				t.Fatalf("message does not say the outcome is unknown: %v", err)
			}
			if ue.Method == "append" && len(ue.Events) != 4 || ue.Method == "remember" && len(ue.Events) < 2 {
				t.Fatalf("%s: %d events carried", ue.Method, len(ue.Events))
			}
			// Looked up in the store (the taker-over) and through an owner
			// (a Client scanning the headers): the same answer.
			for _, api := range []API{s, c} {
				out, err := FindEvents(ctx, api, ue.Events)
				if err != nil {
					t.Fatal(err)
				}
				want, none := len(ue.Events), 0
				if !apply {
					want, none = 0, len(ue.Events)
				}
				if len(out.Written) != want || len(out.Missing) != none {
					t.Fatalf("apply=%v %s via %T: %d written, %d missing of %d", apply, ue.Method, api, len(out.Written), len(out.Missing), len(ue.Events))
				}
				for _, e := range out.Written {
					ev, err := s.st.Log.EventAt(e.Seq)
					if err != nil {
						t.Fatal(err)
					}
					if ev.ID != e.ID || ev.Hash != e.Hash {
						t.Fatalf("found seq %d: id %s hash %s, log has %s %s", e.Seq, e.ID, e.Hash, ev.ID, ev.Hash)
					}
				}
			}
		}
		if head, _ := s.st.Log.Head(); apply && head < 6 || !apply && head != 0 {
			t.Fatalf("apply=%v: head %d", apply, head)
		}
	}
}

// A refused connection proves nothing was sent: it stays OwnerGone and is
// not an unknown outcome.
func TestRefusedConnectionIsNotOutcomeUnknown(t *testing.T) {
	s := newTestStore(t)
	ln, err := net.Listen("unix", SocketPath(s.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the socket file stays; connecting to it is refused
	_, err = c.Append(context.Background(), AppendRequest{JSONL: testJSONL})
	if !OwnerGone(err) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("got %v, want a refused connection (OwnerGone), not an unknown outcome", err)
	}
}
