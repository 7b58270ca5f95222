package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
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

// One mapping from an error's class to the exit status, whatever face of
// the engine the error came through.
func TestExitStatusByClass(t *testing.T) {
	for _, tc := range []struct {
		err   error
		class string
		exit  int
	}{
		{fmt.Errorf("query: %w", query.ErrBadK), "bad_request", 2},
		{fmt.Errorf("append: %w", ucl.ErrBadInput), "bad_request", 2},
		{fmt.Errorf("edit: %w", ucl.ErrUnknownItem), "not_found", 1},
		{&missingError{[]string{"x"}}, "not_found", 1},
		{fmt.Errorf("append: %w", log.ErrIDConflict), "conflict", 1},
		{ucl.ErrWrongVaultKey, "forbidden", 1},
		{fmt.Errorf("open: %w", log.ErrLocked), "unavailable", 1},
		{errors.New("disk on fire"), "internal", 1},
		{usage("hint", "bad --k %d", 0), "bad_request", 2},
		{&flagError{err: errors.New("flag provided but not defined: -x")}, "internal", 1}, // explained before it is reported
	} {
		f := describe(tc.err, nil)
		if f.Class != tc.class || f.Exit != tc.exit {
			t.Errorf("%v: class %s exit %d, want %s %d", tc.err, f.Class, f.Exit, tc.class, tc.exit)
		}
	}
	if f := describe(usage("", "x"), []string{"sync", "push"}); f.Hint != "see `ucl help sync push`" || f.Codes[0] != "usage" {
		t.Errorf("a usage error without its own hint: %+v", f)
	}
}

// Usage errors, in process: the exact line and hint, and the same as one
// JSON object with --json.
func TestUsageErrorWords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		args      []string
		msg, hint string
	}{
		{[]string{"--k", "5", "query", "x"}, "--k is a flag of `ucl query`, given before the command", "put it after the command: ucl query … --k 5"},
		{[]string{"--explain", "query", "x"}, "--explain is a flag of `ucl query`, given before the command", "put it after the command: ucl query … --explain"},
		{[]string{"--sesion", "s", "store", "x"}, "ucl has no flag --sesion", "did you mean --session? It is a flag of `ucl store`: put it after the command"},
		{[]string{"--jsn", "status"}, "ucl has no flag --jsn", "did you mean --json? (see `ucl help` for the global flags)"},
		{[]string{"query", "x", "--kk", "5"}, "ucl query has no flag --kk", "did you mean --k? (see `ucl help query` for its flags)"},
		{[]string{"query", "x", "--zzz"}, "ucl query has no flag --zzz", "see `ucl help query` for its flags"},
		{[]string{"query", "x", "--k", "abc"}, `bad value "abc" for --k: want a whole number`, "see `ucl help query` for its flags"},
		{[]string{"sync", "push", "--every", "soon", "--watch"}, `bad value "soon" for --every: want a duration such as 30s, 5m or 1h`, "see `ucl help sync push` for its flags"},
		{[]string{"sync", "push", "--every"}, "--every needs a value", "--every VALUE (or --every=VALUE); see `ucl help sync push` for its flags"},
		{[]string{"querry"}, `unknown command "querry"`, "did you mean `ucl query`? (run `ucl help` for the list of commands)"},
		{[]string{"que"}, `unknown command "que"`, "did you mean `ucl query`? (run `ucl help` for the list of commands)"},
		{[]string{"sync", "pussh"}, `unknown command "sync pussh"`, "did you mean `ucl sync push`? (run `ucl help sync` for its subcommands)"},
		{[]string{"help", "sync", "pussh"}, `unknown command "sync pussh"`, "did you mean `ucl sync push`? (run `ucl help sync` for its subcommands)"},
		{[]string{"zzzzzz"}, `unknown command "zzzzzz"`, "run `ucl help` for the list of commands"},
		{[]string{"version", "now"}, `unexpected argument "now"`, "`ucl version` takes flags only: see `ucl help version`"},
		{[]string{"status", "now"}, `unexpected argument "now"`, "`ucl status` takes flags only: see `ucl help status`"},
		{[]string{"serve", "tokn"}, `unknown command "serve tokn"`, "did you mean `ucl serve token`? (run `ucl help serve` for its subcommands)"},
	} {
		out, errs, code := runCLI(t, dir, "", tc.args...)
		want := "ucl: " + tc.msg + "\nhint: " + tc.hint + "\n"
		if code != 2 || out != "" || errs != want {
			t.Errorf("ucl %v: exit %d, stdout %q, stderr\n%s\nwant exit 2 and\n%s", tc.args, code, out, errs, want)
		}
		out, errs, code = runCLI(t, dir, "", append([]string{"--json"}, tc.args...)...)
		var doc map[string]failure
		if err := json.Unmarshal([]byte(errs), &doc); err != nil || code != 2 || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("ucl --json %v: exit %d, stdout %q, stderr %q (%v)", tc.args, code, out, errs, err)
			continue
		}
		if f := doc["error"]; f.Message != tc.msg || f.Hint != tc.hint || f.Class != "bad_request" || f.Exit != 2 || !reflect.DeepEqual(f.Codes, []string{"usage"}) {
			t.Errorf("ucl --json %v: %+v", tc.args, f)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"query", "context", "store", "store-tool", "sync", "session", "status", "snapshot", "k", "kind", "explain"}
	for _, tc := range []struct{ word, want string }{
		{"querry", "query"}, {"qeury", "query"}, {"que", "query"}, {"stor", "store"}, {"sesion", "session"},
		{"explian", "explain"}, {"contxt", "context"}, {"snap", "snapshot"},
		{"k", ""}, {"x", ""}, {"frobnicate", ""}, {"query", ""}, {"zz", ""},
	} {
		if got := suggest(tc.word, names); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"qeury", "query", 1}, {"ab", "ba", 1}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

func TestJSONRequested(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"ucl", "status"}, false},
		{[]string{"ucl", "status", "--json"}, true},
		{[]string{"ucl", "--json", "status"}, true},
		{[]string{"ucl", "-json", "status"}, true},
		{[]string{"ucl", "status", "--json=false"}, false},
		{[]string{"ucl", "status", "--json=true"}, true},
		{[]string{"ucl", "store", "--", "--json"}, false},
		{[]string{"ucl", "store", "json"}, false},
		{[]string{"ucl"}, false},
	} {
		if got := jsonRequested(tc.args); got != tc.want {
			t.Errorf("jsonRequested(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// Every command and subcommand refuses an unknown flag, every command with
// subcommands an unknown one, and every command that takes no arguments an
// argument, the same way: exit 2, one line naming it, and a hint.
func TestEveryCommandRefusesUnknownInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	app := newApp(nil, nil, nil)
	n := 0
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Name == "help" && len(path) > 0 {
				continue // urfave's, added when a command has run
			}
			p := append(append([]string{}, path...), c.Name)
			name := strings.Join(p, " ")
			out, errs, code := runCLI(t, dir, "", append(append([]string{}, p...), "--no-such-flag")...)
			want := "ucl: ucl " + name + " has no flag --no-such-flag\nhint: see `ucl help " + name + "` for its flags\n"
			if code != 2 || out != "" || errs != want {
				t.Errorf("ucl %s --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2 and %q", name, code, out, errs, want)
			}
			subs := 0
			for _, s := range c.Subcommands {
				if s.Name != "help" {
					subs++
				}
			}
			if subs > 0 || strings.TrimSpace(c.ArgsUsage) == "" {
				// An unknown subcommand, or an argument to a command that
				// takes none.
				out, errs, code := runCLI(t, dir, "", append(append([]string{}, p...), "no-such-command")...)
				lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
				if code != 2 || out != "" || len(lines) != 2 || !strings.Contains(lines[0], `no-such-command"`) || !strings.HasPrefix(lines[1], "hint: ") {
					t.Errorf("ucl %s no-such-command: exit %d, stdout %q, stderr %q", name, code, out, errs)
				}
			}
			n++
			walk(p, c.Subcommands)
		}
	}
	walk(nil, app.Commands)
	if n < 40 {
		t.Fatalf("only %d commands walked", n)
	}
}
