package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runCLI runs the CLI in process on dir.
func runCLI(t *testing.T, dir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"ucl", "--dir", dir}, args...), strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func TestReorderArgs(t *testing.T) {
	app := newApp(nil, nil, nil)
	for _, tc := range []struct{ in, want []string }{
		{[]string{"ucl", "query", "text", "--k", "5"}, []string{"ucl", "query", "--k", "5", "--", "text"}},
		{[]string{"ucl", "query", "text", "--json"}, []string{"ucl", "--json", "query", "--", "text"}},
		{[]string{"ucl", "--dir", "d", "session", "show", "s1", "--json"}, []string{"ucl", "--dir", "d", "--json", "session", "show", "--", "s1"}},
		{[]string{"ucl", "store", "--", "--not-a-flag"}, []string{"ucl", "store", "--", "--not-a-flag"}},
		{[]string{"ucl", "status"}, []string{"ucl", "status"}},
	} {
		if got := reorderArgs(app, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("reorderArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Usage errors exit 2 with a hint, before any store is touched.
func TestUsageExitCodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none") // no store: usage must fail first
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"query", ""}, "nothing to search for"},
		{[]string{"query", "x", "--k", "0"}, "bad --k"},
		{[]string{"query", "x", "--mode", "psychic"}, "hybrid, bm25 or vector"},
		{[]string{"query", "x", "--since", "2023-06-01", "--until", "2023-05-01"}, "--until must be after --since"},
		{[]string{"context", "x", "--budget", "0"}, "bad --budget"},
		{[]string{"context", "x", "--format", "yaml"}, "xml, json or text"},
		{[]string{"tombstone"}, "no targets"},
		{[]string{"tombstone", "--from", "2023-06-01", "--to", "2023-05-01"}, "bad time range"},
		{[]string{"replay", "--from", "5", "--to", "2"}, "empty range"},
		{[]string{"replay", "--raw", "--session", "s"}, "--session cannot be used with --raw"},
		{[]string{"store", "--kind", "poem", "x"}, "--kind takes"},
		{[]string{"store", "--meta", "novalue", "x"}, "bad --meta"},
		{[]string{"snapshot", "create", "--keep", "-1"}, "bad --keep"},
		{[]string{"sync", "push", "--segment-bytes", "10"}, "bad --segment-bytes"},
		{[]string{"sync", "push", "--every", "5s"}, "without --watch"},
		{[]string{"nonsense"}, "unknown command"},
		{[]string{"help", "nonsense"}, `unknown command "nonsense"`},
		{[]string{"help", "sync", "nonsense"}, `unknown command "sync nonsense"`},
		{[]string{"store", "-k", "document", "x"}, "ucl store has no flag --k"},
		{[]string{"store", "--file", "f", "x"}, "both TEXT and --file given"},
		{[]string{"context", "x", "--active", "a", "--session", "b"}, "both --active and --session given"},
		{[]string{"get"}, "no id given"},
		{[]string{"get", "a", "b"}, "too many arguments"},
	} {
		_, errs, code := runCLI(t, dir, "", tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "hint: ") {
			t.Errorf("ucl %v: exit %d, stderr %q; want exit 2 with %q and a hint", tc.args, code, errs, tc.want)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The --json shapes the scripts rely on.
func TestOutputShapes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := runCLI(t, dir, "", "store", "--session", "s1", "--id", "k", "Remember the cello lesson.")
	if code != 0 {
		t.Fatal(errs)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || !reflect.DeepEqual(keys(res), []string{"hash", "id", "seq"}) {
		t.Fatalf("store output %q: %v", out, err)
	}
	again, _, _ := runCLI(t, dir, "", "store", "--session", "s1", "--id", "k", "Remember the cello lesson.")
	if !strings.Contains(again, `"existed":true`) {
		t.Fatalf("idempotent store: %q", again)
	}
	dup, dupErr, code := runCLI(t, dir, "", "store", "--session", "s1", "remember the  CELLO lesson.")
	if code != 0 || !strings.Contains(dup, `"duplicate_of"`) || !strings.Contains(dupErr, "--allow-duplicate") {
		t.Fatalf("duplicate store: exit %d %q %q", code, dup, dupErr)
	}
	if out, _, code := runCLI(t, dir, "", "store", "--session", "s1", "--allow-duplicate", "remember the  CELLO lesson."); code != 0 || strings.Contains(out, "duplicate_of") {
		t.Fatalf("allowed duplicate: exit %d %q", code, out)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", "--json"}, []string{"dir", "durability", "events", "head_hash", "head_seq", "key_epoch", "log_bytes", "log_id", "mirror_text", "size_bytes", "vault_key", "wallet_address"}},
		{[]string{"session", "list", "--json"}, []string{"sessions"}},
		{[]string{"session", "show", "s1", "--json"}, []string{"chunks", "session", "summary", "total"}},
		{[]string{"query", "cello", "--json"}, []string{"mode", "now_ms", "query", "results", "search_text"}},
		{[]string{"project", "status", "--json"}, []string{"projections"}},
		{[]string{"index", "cello", "--now", "2024-01-01", "--json"}, []string{"budget", "items", "matches", "months", "now", "omitted", "overview", "query", "sessions", "snippets", "text", "tokens", "topics"}},
		{[]string{"dedupe", "--report", "--json"}, []string{"groups", "items", "list", "method", "pairs", "threshold"}},
		{[]string{"tombstone", "--session", "s1", "--json"}, []string{"erasure", "hash", "id", "note", "removed", "seq"}},
		{[]string{"snapshot", "list", "--json"}, []string{"snapshots"}},
	} {
		out, errs, code := runCLI(t, dir, "", tc.args...)
		var m map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
			t.Fatalf("ucl %v: exit %d %q %q", tc.args, code, out, errs)
		}
		if got := keys(m); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ucl %v keys %v, want %v", tc.args, got, tc.want)
		}
	}
}

// `ucl help [COMMAND [SUB]]` prints what `--help` prints, at any depth,
// and `--help` / `-h` themselves succeed at the top level too.
func TestHelpCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"help"}, []string{"COMMANDS:", "get ", "help "}, nil},
		{[]string{"--help"}, []string{"COMMANDS:", "get ", "help "}, []string{"Incorrect Usage"}},
		{[]string{"-h"}, []string{"COMMANDS:", "get ", "help "}, []string{"Incorrect Usage"}},
		{[]string{"query", "--help"}, []string{"ucl query - search memory"}, []string{"Incorrect Usage"}},
		{[]string{"help", "query"}, []string{"ucl query - search memory", "--origin own|shared|all", "--mode hybrid|bm25|vector", "--session SESSION", "filter: only chunks"}, nil},
		{[]string{"help", "sync", "push"}, []string{"ucl sync push - upload every event"}, nil},
		{[]string{"--json", "help", "snapshot", "push"}, []string{"ucl snapshot push - publish a snapshot"}, nil},
		{[]string{"help", "context"}, []string{"--active SESSION", "not a filter"}, []string{"--session value", "--session SESSION", "-s "}},
		{[]string{"help", "store"}, []string{"--kind conversation|document|knowledge|tool_call", "--file"}, []string{"-k "}},
	} {
		out, errs, code := runCLI(t, dir, "", tc.args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tc.args, code, errs)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("%v: output has %q:\n%s", tc.args, w, out)
			}
		}
	}
}

// A short flag means one thing in every command: its long name is the
// same wherever it appears.
func TestShortFlagsOneMeaning(t *testing.T) {
	meaning := map[string]string{}
	where := map[string]string{}
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := strings.TrimSpace(path + " " + c.Name)
			for _, f := range c.Flags {
				names := f.Names()
				for _, n := range names {
					if len(n) != 1 {
						continue
					}
					long := names[0]
					if old, ok := meaning[n]; ok && old != long {
						t.Errorf("-%s is --%s in %s but --%s in %s", n, old, where[n], long, p)
					}
					meaning[n], where[n] = long, p
				}
			}
			walk(p, c.Subcommands)
		}
	}
	walk("", newApp(nil, nil, nil).Commands)
	if len(meaning) == 0 {
		t.Fatal("no short flags found: the walk is broken")
	}
}
