package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
