package httpapi

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeUpstream(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"https://api.openai.com", "https://api.openai.com/v1"},
		{"https://api.openai.com/", "https://api.openai.com/v1"},
		{"https://api.openai.com/v1", "https://api.openai.com/v1"},
		{"https://api.openai.com/v1/", "https://api.openai.com/v1"},
		{" http://127.0.0.1:11434/v1 ", "http://127.0.0.1:11434/v1"},
		{"https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1"},
		{"http://localhost:8000/openai", "http://localhost:8000/openai"},
	} {
		got, err := NormalizeUpstream(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("NormalizeUpstream(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"api.openai.com", "ftp://host/v1", "https:///v1", "https://host/v1?x=1", "https://host/v1#f", "https://u:p@host/v1", "://"} {
		if got, err := NormalizeUpstream(bad); !errors.Is(err, ErrBadUpstream) {
			t.Errorf("NormalizeUpstream(%q) = %q, %v; want ErrBadUpstream", bad, got, err)
		}
	}
	if _, err := New(newStore(t), Options{Token: "t", Upstream: "api.openai.com"}); !errors.Is(err, ErrBadUpstream) {
		t.Errorf("New with a host-only upstream without scheme: %v, want ErrBadUpstream", err)
	}
}

// The proxy reaches UPSTREAM/v1/chat/completions (and /v1/models) whether
// the upstream is given with /v1 or as a bare host, as users write
// https://api.openai.com.
func TestProxyUpstreamWithOrWithoutV1(t *testing.T) {
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		up := newUpstream(t, "plain")
		e := newEnv(t, Options{Upstream: up.srv.URL + suffix})
		resp, b := e.do("POST", "/v1/chat/completions", "application/json", chatBody(t, false, "user", "Where is the sofa?"), SessionHeader, "u1")
		if resp.StatusCode != 200 {
			t.Fatalf("upstream %q: %d %s", suffix, resp.StatusCode, b)
		}
		if resp, b := e.do("GET", "/v1/models", "", nil); resp.StatusCode != 200 {
			t.Fatalf("upstream %q: models %d %s", suffix, resp.StatusCode, b)
		}
		reqs := up.requests()
		if len(reqs) != 2 || reqs[0].path != "/v1/chat/completions" || reqs[1].path != "/v1/models" {
			var paths []string
			for _, r := range reqs {
				paths = append(paths, r.path)
			}
			t.Errorf("upstream %q: requests went to %q, want [/v1/chat/completions /v1/models]", suffix, paths)
		}
	}
}

// NormalizeUpstream never panics; what it accepts is an http(s) URL with
// a host and no trailing slash, and normalising it again changes nothing.
func FuzzNormalizeUpstream(f *testing.F) {
	for _, s := range []string{"", "https://api.openai.com", "https://api.openai.com/v1/", "http://127.0.0.1:11434/v1",
		"https://openrouter.ai/api/v1", "api.openai.com", "https://u:p@h/v1", "https://h/%2F/", "http://[::1]:8080", "https://h/v1?x=1#f", " https://h// "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := NormalizeUpstream(raw)
		if err != nil {
			if !errors.Is(err, ErrBadUpstream) {
				t.Fatalf("%q: %v is not ErrBadUpstream", raw, err)
			}
			return
		}
		if got == "" {
			return
		}
		if !strings.HasPrefix(got, "http://") && !strings.HasPrefix(got, "https://") || strings.HasSuffix(got, "/") {
			t.Fatalf("%q -> %q", raw, got)
		}
		again, err := NormalizeUpstream(got)
		if err != nil || again != got {
			t.Fatalf("%q -> %q -> %q, %v: not stable", raw, got, again, err)
		}
	})
}
