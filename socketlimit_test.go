package ucl

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// endless is a request body of n bytes that counts what was read of it.
type endless struct {
	n, read int64
	got     *atomic.Int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.n {
		return 0, nil
	}
	k := min(int64(len(p)), e.n-e.read)
	for i := range p[:k] {
		p[i] = ' '
	}
	e.read += k
	e.got.Add(k)
	return int(k), nil
}

// TestSocketRefusesHugeRequestEarly: a 400 MB request to the owner's
// socket is refused from its declared length, before its body is read
// (the owner read all of it: 400 MB in, 1.9 GB of memory).
func TestSocketRefusesHugeRequestEarly(t *testing.T) {
	s := newTestStore(t)
	serve(t, s)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", SocketPath(s.Dir()))
	}}}
	var got atomic.Int64
	const size = 400 << 20
	req, err := http.NewRequest("POST", "http://ucl/v1/append", &endless{n: size, got: &got})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	res, err := decodeResponse[AppendResult](resp.Body)
	if err == nil || !strings.Contains(err.Error(), "over the limit") || res != nil {
		t.Fatalf("answer %v, %v", res, err)
	}
	if n := got.Load(); n > 8<<20 {
		t.Fatalf("the owner read %d MB of a refused request", n>>20)
	}
}

// TestClientAppendSplitsLargeInput: an attached append larger than one
// socket request goes in pieces cut at line ends, all of it stored.
func TestClientAppendSplitsLargeInput(t *testing.T) {
	defer func(n int) { appendPieceBytes = n }(appendPieceBytes)
	appendPieceBytes = 200
	s := newTestStore(t)
	c := serve(t, s)
	res, err := c.Append(context.Background(), AppendRequest{JSONL: testJSONL + testJSONL[:len(testJSONL)-1]})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 6 {
		t.Fatalf("%d results", len(res.Results))
	}
	// The second copy duplicates the first by text: nothing more is
	// written, and each result says which item it duplicates.
	for i, r := range res.Results[3:] {
		if r.DuplicateOf == "" || r.Seq != res.Results[i].Seq {
			t.Fatalf("result %d: %+v", i+3, r)
		}
	}
	if head, _ := s.st.Log.Head(); head != 3 {
		t.Fatalf("head %d", head)
	}
}
