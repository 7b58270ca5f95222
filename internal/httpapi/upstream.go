package httpapi

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrBadUpstream is returned by New and NormalizeUpstream when the upstream
// is not an absolute http or https URL without query or fragment.
var ErrBadUpstream = errors.New("httpapi: bad upstream URL")

// NormalizeUpstream returns the canonical form of an OpenAI-compatible base
// URL, the one requests are sent under (UPSTREAM/chat/completions): no
// trailing slash, and /v1 added when the URL names only a host, so
// https://api.openai.com and https://api.openai.com/v1 both become
// https://api.openai.com/v1. Any other path is kept as given: servers that
// put the API elsewhere (…/api/v1, …/openai/v1) are named by their path.
// "" (no upstream) stays "".
func NormalizeUpstream(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("parse upstream %q: %w: %v", raw, ErrBadUpstream, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("upstream %q: %w: want http(s)://host[/path]", raw, ErrBadUpstream)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("upstream %q: %w: a base URL has no query, fragment or user info", raw, ErrBadUpstream)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if u.Path == "" {
		u.Path = "/v1"
	}
	return u.String(), nil
}
