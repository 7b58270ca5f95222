package httpapi

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docRoutes returns the routes a document lists, matched by re (its first
// group is "VERB /path", query strings cut off).
func docRoutes(t *testing.T, path string, re *regexp.Regexp) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		verb, p, _ := strings.Cut(m[1], " ")
		p, _, _ = strings.Cut(strings.TrimSpace(p), "?")
		out = append(out, verb+" "+p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The package doc and docs/serve.md list exactly the routes the server
// registers (the method table's and this package's own).
func TestDocsListEveryRoute(t *testing.T) {
	want := Routes()
	slices.Sort(want)
	for _, d := range []struct {
		path string
		re   *regexp.Regexp
	}{
		{"doc.go", regexp.MustCompile(`(?m)^//\t((?:GET|POST) +/v1/\S+)`)},
		{"../../docs/serve.md", regexp.MustCompile("(?m)^\\| `((?:GET|POST) /v1/[^`]+)`")},
	} {
		got := docRoutes(t, d.path, d.re)
		for i := range got {
			verb, p, _ := strings.Cut(got[i], " ")
			got[i] = verb + " " + strings.TrimSpace(p)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s lists routes\n %v\nthe server has\n %v", d.path, got, want)
		}
	}
}

// Every path the server knows answers 405 (with Allow) to the other verb,
// and an unknown path 404: one matcher over Routes decides both.
func TestWrongVerbIs405(t *testing.T) {
	s, err := New(nil, Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Routes() {
		verb, path, _ := strings.Cut(r, " ")
		path = strings.ReplaceAll(strings.ReplaceAll(path, "{id}", "x"), "{", "")
		other := http.MethodGet
		if verb == http.MethodGet {
			other = http.MethodPost
		}
		req := httptest.NewRequest(other, path, nil)
		req.Header.Set("Authorization", "Bearer t")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != verb {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %s", other, path, w.Code, w.Header().Get("Allow"), verb)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/nosuch", nil)
	req.Header.Set("Authorization", "Bearer t")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusNotFound {
		t.Errorf("unknown path: %d, want 404", w.Code)
	}
}
