package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// Every id `ucl index` shows opens with `ucl get`; bad flags are refused
// with a hint.
func TestIndexCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	var sb strings.Builder
	for i := 0; i < 120; i++ {
		fmt.Fprintf(&sb, `{"session":"s%d","role":"user","content":"Cello lesson %d: scales, then etude %d.","time":"2023-0%d-1%dT10:00:00Z"}`+"\n", i/20, i, i*7, 1+i%6, i%10)
	}
	if _, errs, code := runCLI(t, dir, sb.String(), "append", "-"); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := runCLI(t, dir, "", "index", "cello", "--budget", "1200", "--now", "2023-07-01")
	if code != 0 {
		t.Fatalf("index: %d %s", code, errs)
	}
	ids := regexp.MustCompile(`(?m)^(?:- |\[)([^\]\s]+)\]? \d{4}-\d\d-\d\d `).FindAllStringSubmatch(out, -1)
	if len(ids) == 0 || !strings.Contains(out, "120 matches") {
		t.Fatalf("index shows no ids:\n%s", out)
	}
	args := []string{"get", "--json"}
	for _, m := range ids {
		args = append(args, m[1])
	}
	got, errs, code := runCLI(t, dir, "", args...)
	if code != 0 {
		t.Fatalf("ucl get of the index ids: %d %s", code, errs)
	}
	if n := strings.Count(got, `"found":true`); n != len(ids) {
		t.Fatalf("ucl get found %d of the %d ids the index shows:\n%s", n, len(ids), got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"index", "--budget", "10"}, "--budget"},
		{[]string{"index", "--kind", "poem"}, "--kind"},
		{[]string{"index", "--since", "soon"}, "--since"},
		{[]string{"index", "a", "b"}, "quote"},
		{[]string{"dedupe"}, "--report"},
		{[]string{"dedupe", "--report", "--threshold", "2"}, "--threshold"},
	} {
		_, errs, code := runCLI(t, dir, "", tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("ucl %v: exit %d, stderr %q (want %q)", tc.args, code, errs, tc.want)
		}
	}
}

// The engine returns each group's call as data; `ucl index` shows it as
// the ucl command that opens it (every one of them runs), the whole text
// still under the budget, and --json keeps the data.
func TestIndexLinksAsCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	var sb strings.Builder
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&sb, `{"session":"s%02d","role":"user","content":"Cello lesson %d: scales, then etude %d.","time":"2023-0%d-1%dT10:00:00Z"}`+"\n", i/30, i, i*7, 1+i%6, i%10)
	}
	if _, errs, code := runCLI(t, dir, sb.String(), "append", "-"); code != 0 {
		t.Fatal(errs)
	}
	links := regexp.MustCompile(`(?m) → (.*)$`)
	for _, args := range [][]string{
		{"index", "--budget", "1500", "--now", "2023-07-01"},          // session groups: session show
		{"index", "cello", "--budget", "1500", "--now", "2023-07-01"}, // month groups: a narrower index
	} {
		out, errs, code := runCLI(t, dir, "", args...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
		if n := textutil.EstimateTokens(out); n > 1500 {
			t.Fatalf("%v: %d tokens over the budget:\n%s", args, n, out)
		}
		ms := links.FindAllStringSubmatch(out, -1)
		if len(ms) == 0 {
			t.Fatalf("%v: no group links:\n%s", args, out)
		}
		for _, m := range ms {
			f := strings.Fields(m[1])
			if f[0] != "ucl" || (f[1] != "index" && f[1] != "session") {
				t.Fatalf("%v: link %q is not a ucl command", args, m[1])
			}
			if _, errs, code := runCLI(t, dir, "", f[1:]...); code != 0 {
				t.Fatalf("%v: link %q: exit %d %s", args, m[1], code, errs)
			}
		}
		js, errs, code := runCLI(t, dir, "", append([]string{"--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v --json: %d %s", args, code, errs)
		}
		var res struct {
			Sessions, Months []struct {
				Open struct {
					Method string         `json:"method"`
					Args   map[string]any `json:"args"`
				} `json:"open"`
			}
		}
		if err := json.Unmarshal([]byte(js), &res); err != nil {
			t.Fatal(err)
		}
		for _, g := range append(res.Sessions, res.Months...) {
			if g.Open.Method != "session" && g.Open.Method != "index" || len(g.Open.Args) == 0 {
				t.Fatalf("%v --json: link %+v is not data", args, g.Open)
			}
		}
	}
}
