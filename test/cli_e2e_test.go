package test

import (
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI's error contract, through the built binary: a bad command line
// or a bad value exits 2, anything else that fails exits 1 (the engine's
// error class decides); the error is one line and a hint, or with --json
// one JSON object on stderr naming the message, class and hint; nothing
// goes to stdout but what the command answered.
func TestCLIErrorContract(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "", "store", "--session", "s1", "--chunk-id", "known", "The cutover is on Saturday.")
	for _, tc := range []struct {
		args       []string
		stdin      string
		exit       int
		class, msg string
		hint       string
		jsonStdout string // what stdout holds with --json ("" : nothing)
	}{
		// A command's flag before the command.
		{args: []string{"--k", "5", "query", "cutover"}, exit: 2, class: "bad_request",
			msg: "--k is a flag of `ucl query`, given before the command", hint: "put it after the command: ucl query … --k 5"},
		{args: []string{"--refresh", "sync", "status"}, exit: 2, class: "bad_request",
			msg: "--refresh is a flag of `ucl sync status`", hint: "put it after the command"},
		{args: []string{"--sesion", "s1", "store", "x"}, exit: 2, class: "bad_request",
			msg: "ucl has no flag --sesion", hint: "did you mean --session? It is a flag of `ucl store`"},
		// Bad values, missing values, unknown flags.
		{args: []string{"query", "cutover", "--k", "abc"}, exit: 2, class: "bad_request",
			msg: `bad value "abc" for --k: want a whole number`, hint: "ucl help query"},
		{args: []string{"query", "cutover", "--k", "0"}, exit: 2, class: "bad_request", msg: "bad --k 0", hint: "--k takes a positive number"},
		{args: []string{"query", "cutover", "--mode", "psychic"}, exit: 2, class: "bad_request", msg: "bad mode", hint: "--mode takes hybrid, bm25 or vector"},
		{args: []string{"query", "cutover", "--now", "noon-ish"}, exit: 2, class: "bad_request", msg: "bad --now", hint: "--now 2023-06-14T09:00:00Z"},
		{args: []string{"store", "--kind", "wizard", "x"}, exit: 2, class: "bad_request", msg: `parse kind "wizard"`, hint: "--kind takes conversation"},
		{args: []string{"sync", "push", "--every"}, exit: 2, class: "bad_request", msg: "--every needs a value", hint: "ucl help sync push"},
		{args: []string{"--dir"}, exit: 2, class: "bad_request", msg: "--dir needs a value", hint: "--dir VALUE"},
		{args: []string{"query", "cutover", "--explian"}, exit: 2, class: "bad_request",
			msg: "ucl query has no flag --explian", hint: "did you mean --explain?"},
		{args: []string{"replay", "--nope"}, exit: 2, class: "bad_request", msg: "ucl replay has no flag --nope", hint: "ucl help replay"},
		{args: []string{"serve", "--upstream", "api.openai.com"}, exit: 2, class: "bad_request", msg: `"api.openai.com" is not an http(s) URL`, hint: "fix the setting"},
		// A value naming a file that is not there, or not a key.
		{args: []string{"store", "--file", "nosuch.md"}, exit: 2, class: "bad_request", msg: "open nosuch.md", hint: "--file takes a readable file"},
		{args: []string{"append", "nosuch.jsonl"}, exit: 2, class: "bad_request", msg: "open nosuch.jsonl", hint: "give a JSONL file"},
		{args: []string{"status", "--vault-key", "nosuch"}, exit: 2, class: "bad_request", msg: "not a recovery code", hint: "--vault-key takes a recovery code"},
		// Unknown commands.
		{args: []string{"querry", "cutover"}, exit: 2, class: "bad_request", msg: `unknown command "querry"`, hint: "did you mean `ucl query`?"},
		{args: []string{"sync", "pussh"}, exit: 2, class: "bad_request", msg: `unknown command "sync pussh"`, hint: "did you mean `ucl sync push`?"},
		{args: []string{"help", "snapshot", "crate"}, exit: 2, class: "bad_request", msg: `unknown command "snapshot crate"`, hint: "did you mean `ucl snapshot create`?"},
		{args: []string{"frobnicate"}, exit: 2, class: "bad_request", msg: `unknown command "frobnicate"`, hint: "run `ucl help` for the list of commands"},
		// The engine refuses the input: a bad request too.
		{args: []string{"append", "-"}, stdin: `{"session":"s1","content":"x","colour":"red"}` + "\n", exit: 2, class: "bad_request",
			msg: `line 1: field "colour"`, hint: "nothing was written"},
		// Not found: exit 1, with or without --json.
		{args: []string{"get", "nosuch"}, exit: 1, class: "not_found", msg: `no live chunk or document with id "nosuch"`, hint: "ids are printed by",
			jsonStdout: `{"items":[{"id":"nosuch","found":false,"chunks":[],"content":""}]}`},
		{args: []string{"edit", "nosuch", "new text"}, exit: 1, class: "not_found", msg: "no such item", hint: "nothing was written"},
		{args: []string{"tombstone", "--chunk", "nosuch"}, exit: 1, class: "not_found", msg: "matches no live chunk", hint: "nothing was written"},
		{args: []string{"session", "show", "nosuch"}, exit: 1, class: "not_found", msg: `session "nosuch"`, hint: "ucl session list"},
	} {
		r := ucl(t, dir, tc.stdin, tc.args...)
		lines := strings.Split(strings.TrimSuffix(r.err, "\n"), "\n")
		if r.code != tc.exit || r.out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "ucl: ") || !strings.Contains(lines[0], tc.msg) ||
			!strings.HasPrefix(lines[1], "hint: ") || !strings.Contains(lines[1], tc.hint) {
			t.Errorf("ucl %s: want exit %d, nothing on stdout, and on stderr one line with %q and a hint with %q; got %s", strings.Join(tc.args, " "), tc.exit, tc.msg, tc.hint, r)
		}
		// The same with --json, given last (or first, when the command line
		// starts or ends with a flag: that flag may be what broke the parse,
		// or would take --json as its value).
		jargs := append(append([]string{}, tc.args...), "--json")
		if strings.HasPrefix(tc.args[0], "-") || strings.HasPrefix(tc.args[len(tc.args)-1], "-") {
			jargs = append([]string{"--json"}, tc.args...)
		}
		r = ucl(t, dir, tc.stdin, jargs...)
		var doc struct {
			Error struct {
				Message, Class, Hint string
				Codes                []string
				Exit                 int
			}
		}
		errLines := strings.Split(strings.TrimSuffix(r.err, "\n"), "\n")
		if err := json.Unmarshal([]byte(r.err), &doc); err != nil || len(errLines) != 1 {
			t.Errorf("ucl %s: stderr is not one JSON object: %v\n%s", strings.Join(jargs, " "), err, r)
			continue
		}
		e := doc.Error
		if r.code != tc.exit || e.Exit != tc.exit || e.Class != tc.class || !strings.Contains(e.Message, tc.msg) || !strings.Contains(e.Hint, tc.hint) {
			t.Errorf("ucl %s: want exit %d, class %s, message with %q, hint with %q; got %+v\n%s", strings.Join(jargs, " "), tc.exit, tc.class, tc.msg, tc.hint, e, r)
		}
		if tc.jsonStdout == "" && r.out != "" || !strings.Contains(r.out, tc.jsonStdout) {
			t.Errorf("ucl %s: stdout %q, want %q", strings.Join(jargs, " "), r.out, tc.jsonStdout)
		}
	}
	// Several ids with --json: every answer is printed, and a missing one
	// still fails the command.
	r := ucl(t, dir, "", "get", "known", "nosuch", "--json")
	if r.code != 1 || !strings.Contains(r.out, `"id":"known","found":true`) || !strings.Contains(r.out, `"id":"nosuch","found":false`) ||
		!strings.Contains(r.err, `"class":"not_found"`) {
		t.Errorf("ucl get known nosuch --json: %s", r)
	}
	// Nothing above wrote anything.
	if h := jsonDoc(t, must(t, dir, "", "status", "--json"))["head_seq"]; h != float64(1) {
		t.Fatalf("refused commands moved the head to %v", h)
	}
}

// `ucl version` prints the version; with --json (before or after the
// command) an object a script can read.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "none") // needs no store
	out := must(t, dir, "", "version")
	if !strings.HasPrefix(out, "ucl ") || strings.Count(out, "\n") != 1 {
		t.Fatalf("ucl version: %q", out)
	}
	for _, args := range [][]string{{"version", "--json"}, {"--json", "version"}} {
		v := jsonDoc(t, must(t, dir, "", args...))
		if v["version"] == "" || v["version"] == nil || !strings.HasPrefix(v["go"].(string), "go") || !strings.Contains(v["platform"].(string), "/") {
			t.Fatalf("ucl %v: %v", args, v)
		}
		if !strings.Contains(out, v["version"].(string)) {
			t.Fatalf("ucl version says %q, --json %v", out, v["version"])
		}
	}
	if v := must(t, dir, "", "--version"); v != out {
		t.Fatalf("ucl --version says %q, ucl version %q", v, out)
	}
	if r := ucl(t, dir, "", "version", "extra"); r.code != 2 || !strings.Contains(r.err, `unexpected argument "extra"`) || !strings.Contains(r.err, "ucl help version") {
		t.Fatalf("ucl version extra: %s", r)
	}
}

// An edit made from the command line names its editor in the history:
// cli and the OS user, in `ucl get --history` and in its --json.
func TestEditHistoryNamesCLIEditor(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "", "store", "--session", "s1", "--chunk-id", "plan", "Lisbon in May.")
	must(t, dir, "", "edit", "plan", "Lisbon in June.")
	must(t, dir, "", "edit", "plan", "Lisbon in July.", "--by", "alice")
	want := "cli"
	if u, err := user.Current(); err == nil && u.Username != "" {
		want = "cli:" + u.Username
	}
	hist := must(t, dir, "", "get", "plan", "--history")
	if !strings.Contains(hist, "stored, role user") || !strings.Contains(hist, "edited by "+want+" ") || !strings.Contains(hist, "edited by alice ") {
		t.Fatalf("history does not name the editors (want %q and alice):\n%s", want, hist)
	}
	var res struct {
		Items []struct {
			History []struct {
				By   string
				Edit bool
			}
		}
	}
	if err := json.Unmarshal([]byte(must(t, dir, "", "get", "plan", "--history", "--json")), &res); err != nil || len(res.Items) != 1 {
		t.Fatal(err)
	}
	h := res.Items[0].History
	if len(h) != 3 || h[0].Edit || h[0].By != "user" || h[1].By != want || h[2].By != "alice" {
		t.Fatalf("history %+v, want the role, then %q, then alice", h, want)
	}
}

// `ucl serve --upstream` takes the upstream with its /v1 (canonical) or as
// a bare host, as users write https://api.openai.com: either way the
// official OpenAI client's request reaches UPSTREAM/v1/chat/completions,
// and the serving line prints the canonical form.
func TestServeUpstreamWithOrWithoutV1(t *testing.T) {
	t.Parallel()
	openaiClient(t) // skip early without node
	for _, suffix := range []string{"", "/v1"} {
		up := newRecordingUpstream(t)
		dir := newStore(t)
		srv := startServe(t, dir, []string{"OPENAI_API_KEY=" + e2eUpstreamKey}, "--upstream", up.srv.URL+suffix)
		if !strings.Contains(srv.stderr.String(), "(upstream "+up.srv.URL+"/v1,") {
			t.Fatalf("--upstream %q: the serving line does not name %s/v1: %s", suffix, up.srv.URL, srv.stderr.String())
		}
		token, err := os.ReadFile(filepath.Join(dir, "token"))
		if err != nil {
			t.Fatal(err)
		}
		r := runOpenAI(t, "http://"+srv.addr+"/v1", strings.TrimSpace(string(token)), "up", "plain", "Where does Momo sleep?")
		if r["content"] != "Answer to: Where does Momo sleep?" {
			t.Fatalf("--upstream %q: %v", suffix, r)
		}
		reqs := up.requests()
		if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
			var paths []string
			for _, q := range reqs {
				paths = append(paths, q.Path)
			}
			t.Fatalf("--upstream %q: upstream requests went to %q, want one to /v1/chat/completions", suffix, paths)
		}
	}
}
