package ucl

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// golden compares got with testdata/name, rewriting it when
// UCL_UPDATE_GOLDEN is set.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s changed (wire format):\n got %s\nwant %s", name, got, want)
	}
}

// The error codes are wire format: existing codes never change.
func TestErrorCodesGolden(t *testing.T) {
	var b strings.Builder
	seen := map[string]bool{}
	for _, c := range errorCodes {
		if seen[c.code] {
			t.Fatalf("duplicate code %q", c.code)
		}
		seen[c.code] = true
		if c.class == "" {
			t.Fatalf("code %q has no class", c.code)
		}
		b.WriteString(c.code + " " + string(c.class) + "\n")
	}
	golden(t, "error_codes.golden", []byte(b.String()))
}

// The response envelope and an error as they cross the socket.
func TestEnvelopeGolden(t *testing.T) {
	err := &log.CorruptionError{Seq: 7, Segment: "00000001.seg", Offset: 4096, Err: log.ErrChecksum}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.Encode(response{Result: &EventResult{Seq: 3}})
	enc.Encode(response{Error: toWire(err)})
	enc.Encode(response{Error: toWire(query.ErrBadBudget)})
	golden(t, "envelope.golden", buf.Bytes())

	// Decoding gives back the sentinels and the corruption position.
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	r, e := decodeResponse[EventResult](bytes.NewReader(lines[0]))
	if e != nil || r.Seq != 3 {
		t.Fatalf("result: %+v %v", r, e)
	}
	_, e = decodeResponse[EventResult](bytes.NewReader(lines[1]))
	var ce *log.CorruptionError
	if !errors.Is(e, log.ErrChecksum) || !errors.As(e, &ce) || ce.Seq != 7 || ce.Offset != 4096 || e.Error() != err.Error() {
		t.Fatalf("corruption across the wire: %v %+v", e, ce)
	}
	if _, e = decodeResponse[EventResult](bytes.NewReader(lines[2])); !errors.Is(e, query.ErrBadBudget) || errors.Is(e, query.ErrBadK) {
		t.Fatalf("sentinel across the wire: %v", e)
	}
}

func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{`{"result":{"seq":1,"id":"00","hash":"00"}}`, `{"result":null,"error":{"message":"x","codes":["log_locked"]}}`,
		`{"error":{"message":"c","corruption":{"seq":1,"segment":"s","offset":-1,"err":"e"}}}`, `{`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := decodeResponse[TombstoneResult](bytes.NewReader(b))
		if err != nil || res == nil {
			return // malformed answers are errors, never panics
		}
		// A decoded result survives another trip.
		enc, err := json.Marshal(response{Result: res})
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeResponse[TombstoneResult](bytes.NewReader(enc))
		if err != nil {
			t.Fatalf("re-decode %s: %v", enc, err)
		}
		if a, _ := json.Marshal(again); !bytes.Equal(a, mustJSON(t, res)) {
			t.Fatalf("round trip changed %s into %s", mustJSON(t, res), a)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzDecodeStream(f *testing.F) {
	for _, s := range []string{"{\"line\":{\"seq\":1}}\n{\"done\":true}\n", "{\"entry\":{}}\n{\"error\":{\"message\":\"m\"}}\n", "{\"x\":1}\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		err := decodeStream(bytes.NewReader(b), "line", func(json.RawMessage) error { n++; return nil })
		if err == nil && !bytes.Contains(b, []byte(`"done"`)) {
			t.Fatalf("stream without done accepted: %q", b)
		}
	})
}
