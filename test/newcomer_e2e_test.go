package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func goroot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// A document stored through the CLI comes back byte for byte from
// `ucl get DOC`, the id `ucl store` printed.
func TestStoreGetDocumentExactCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	root := goroot(t)
	for _, name := range []string{"src/strings/builder.go", "src/net/http/server.go", "src/fmt/doc.go"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		want := string(b)
		r := ucl(t, dir, want, "store", "--kind", "document", "--meta", "name="+name, "-")
		if r.code != 0 {
			t.Fatalf("store %s: %s", name, r)
		}
		lines := jsonLines(t, r.out)
		doc, _ := lines[0]["chunk_parent"].(string)
		if len(lines) < 2 || doc == "" {
			t.Fatalf("%s: want several chunks with a chunk_parent: %s", name, r.out)
		}
		for i, ln := range lines {
			if ln["chunk_parent"] != doc {
				t.Fatalf("%s: chunk %d has parent %v, want %s", name, i, ln["chunk_parent"], doc)
			}
		}
		if !strings.Contains(r.err, "ucl get "+doc) {
			t.Fatalf("%s: store does not say how to read the document back: %q", name, r.err)
		}
		got := must(t, dir, "", "get", doc)
		if got != want {
			t.Fatalf("%s: get returned %d bytes, want the %d stored bytes exactly", name, len(got), len(want))
		}
		js := jsonDoc(t, must(t, dir, "", "get", "--json", doc))
		it := js["items"].([]any)[0].(map[string]any)
		if it["content"] != want || len(it["chunks"].([]any)) != len(lines) {
			t.Fatalf("%s: --json item differs from the stored document", name)
		}
	}
	r := ucl(t, dir, "", "get", "nosuch")
	if r.code != 1 || !strings.Contains(r.err, `no live chunk or document with id "nosuch"`) {
		t.Fatalf("get nosuch: %s", r)
	}
	if r := ucl(t, dir, "", "get"); r.code != 2 || !strings.Contains(r.err, "no id given") {
		t.Fatalf("get without id: %s", r)
	}
}

func headOfStore(t *testing.T, dir string) float64 {
	t.Helper()
	return jsonDoc(t, must(t, dir, "", "status", "--json"))["head_seq"].(float64)
}

// A tombstone whose targets match nothing is refused and writes nothing.
func TestTombstoneOfNothingCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "", "store", "--session", "s1", "The cutover is on Saturday.")
	head := headOfStore(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tombstone", "--chunk", "deadbeef"}, `tombstone chunks deadbeef: ucl: matches no live chunk`},
		{[]string{"tombstone", "--session", "nosuch"}, `tombstone session "nosuch": ucl: matches no live chunk`},
		{[]string{"tombstone", "--session", "s1", "--from", "1990-01-01", "--to", "1990-02-01"}, `session "s1" and content time [1990-01-01T00:00:00Z, 1990-02-01T00:00:00Z)`},
		{[]string{"tombstone", "--document", "nosuch"}, `no live document with chunk parent "nosuch"`},
	} {
		r := ucl(t, dir, "", tc.args...)
		if r.code != 1 || !strings.Contains(r.err, tc.want) || !strings.Contains(r.err, "nothing was written") {
			t.Errorf("%v: %s", tc.args, r)
		}
	}
	if got := headOfStore(t, dir); got != head {
		t.Fatalf("refused tombstones moved the head from %v to %v", head, got)
	}
	r := ucl(t, dir, "", "tombstone", "--session", "s1")
	if r.code != 0 || !strings.Contains(r.out, "removed 1 chunk(s)") {
		t.Fatalf("tombstone s1: %s", r)
	}
}

// A time phrase whose window holds none of the results says so: time
// phrases rank their window first (they do not filter), so the results
// shown come from other times, and the output must not let them pass for
// "yesterday". --no-time ignores the phrase. (The filter mode's note, with
// the count without the filter, is tested in the engine: TestTimeNote.)
func TestTimePhraseOutsideWindowSaysSoCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	for i, txt := range []string{"The lasagna recipe needs ricotta.", "Buy ricotta for the lasagna.", "Lasagna night is Friday."} {
		must(t, dir, "", "store", "--session", "cook", "--time", "2026-10-0"+string(rune('1'+i))+"T12:00:00Z", txt)
	}
	now := "--now=2026-11-22T10:00:00Z"
	r := ucl(t, dir, "", "query", "lasagna yesterday", now)
	if r.code != 0 || !strings.Contains(r.out, `note: "yesterday" → 2026-11-21: no result is from that time`) || !strings.Contains(r.out, "--no-time") {
		t.Fatalf("results outside the phrase's window: %s", r)
	}
	js := jsonDoc(t, must(t, dir, "", "query", "lasagna yesterday", now, "--json"))
	tf, ok := js["time_filter"].(map[string]any)
	if !ok || tf["mode"] != "boost" || len(js["results"].([]any)) != 3 || tf["since_ms"] == nil {
		t.Fatalf("--json time_filter: %v", js)
	}
	js = jsonDoc(t, must(t, dir, "", "query", "lasagna yesterday", now, "--no-time", "--json"))
	if len(js["results"].([]any)) != 3 || js["time_filter"] != nil {
		t.Fatalf("--no-time: %v", js)
	}
	// A result within the window, or no phrase at all: no note.
	js = jsonDoc(t, must(t, dir, "", "query", "lasagna in October 2026", now, "--json"))
	if len(js["results"].([]any)) != 3 || js["time_filter"] != nil {
		t.Fatalf("matching phrase: %v", js)
	}
	if r := must(t, dir, "", "query", "zucchini", now); strings.TrimSpace(r) != "no results" {
		t.Fatalf("no phrase: %q", r)
	}
}

// A file is read only with --file; a text argument that names a file is
// stored as text, with a warning.
func TestStoreFileFlagCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	path := filepath.Join(goroot(t), "src/strings/builder.go")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := ucl(t, dir, "", "store", path)
	if r.code != 0 || !strings.Contains(r.err, "warning: storing the text") || !strings.Contains(r.err, "ucl store --file "+path) {
		t.Fatalf("path as text: %s", r)
	}
	r = ucl(t, dir, "", "store", "--kind", "document", "--file", path)
	if r.code != 0 || strings.Contains(r.err, "warning") {
		t.Fatalf("--file: %s", r)
	}
	doc := jsonLines(t, r.out)[0]["chunk_parent"].(string)
	if got := must(t, dir, "", "get", doc); got != string(want) {
		t.Fatalf("--file stored %d bytes differently from the %d in the file", len(got), len(want))
	}
	js := jsonDoc(t, must(t, dir, "", "get", "--json", doc))
	if m := js["items"].([]any)[0].(map[string]any)["chunks"].([]any)[0].(map[string]any)["meta"].(map[string]any); m["name"] != "builder.go" {
		t.Fatalf("--file meta: %v", m)
	}
	head := headOfStore(t, dir)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"store", "--file", path, "more text"}, 2, "both TEXT and --file given"},
		// A file that is not there is a bad value of --file: a usage error.
		{[]string{"store", "--file", filepath.Join(t.TempDir(), "missing.txt")}, 2, "nothing was written"},
	} {
		if r := ucl(t, dir, "", tc.args...); r.code != tc.code || !strings.Contains(r.err, tc.want) {
			t.Errorf("%v: %s", tc.args, r)
		}
	}
	if got := headOfStore(t, dir); got != head {
		t.Fatalf("refused stores moved the head from %v to %v", head, got)
	}
}

// --vault-key takes a recovery code as well as a file.
func TestVaultKeyRecoveryCodeCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "", "store", "--session", "s1", "The boat is in dock 4.")
	code := strings.TrimSpace(must(t, dir, "", "keys", "export"))
	if err := os.Rename(filepath.Join(dir, "vault.key"), filepath.Join(t.TempDir(), "vault.key")); err != nil {
		t.Fatal(err)
	}
	if out := must(t, dir, "", "replay", "--vault-key", code); !strings.Contains(out, "dock 4") {
		t.Fatalf("replay with a recovery code: %s", out)
	}
	must(t, dir, "", "store", "--vault-key", code, "The oars are in the shed.")
	bad := code[:len(code)-3] + "AAA"
	if bad == code {
		bad = code[:len(code)-3] + "BBB"
	}
	for _, arg := range []string{bad, filepath.Join(t.TempDir(), "nofile")} {
		r := ucl(t, dir, "", "replay", "--vault-key", arg)
		if r.code == 0 || strings.Contains(r.err, code[5:20]) {
			t.Fatalf("--vault-key %q: %s", arg, r)
		}
	}
	if r := ucl(t, dir, "", "replay", "--vault-key", "nofile"); !strings.Contains(r.err, "not a recovery code") {
		t.Fatalf("missing key file: %s", r)
	}
}

// A push that fails before anything is mirrored says so in words.
func TestFailedPushNothingMirroredCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "", "store", "one")
	must(t, dir, "", "store", "two")
	r := ucl(t, dir, "", "sync", "push", "--gateway", "http://127.0.0.1:1")
	if r.code == 0 || !strings.Contains(r.err, "nothing mirrored yet: 0 of 2 events on Arweave") || strings.Contains(r.err, "1..0") {
		t.Fatalf("failed push: %s", r)
	}
	if out := must(t, dir, "", "status"); strings.Contains(out, "1..0") || strings.Contains(out, "up to 0") {
		t.Fatalf("status after a failed push: %s", out)
	}
}
