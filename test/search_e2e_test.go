package test

import (
	"reflect"
	"strings"
	"testing"
)

// searchFixture: a few turns about a trip, with meta, a tool call, an
// edit, a superseding item and a tombstoned one.
func searchFixture(t *testing.T) string {
	t.Helper()
	dir := newStore(t)
	must(t, dir, `{"session":"trip","role":"user","content":"Cheap Lisbon fares in March, the train is slower","meta":{"project":"apollo"},"time":"2023-10-02T10:00:00Z","chunk_id":"fares"}
{"session":"trip","role":"assistant","content":"Book the 9am flight to Lisbon","time":"2023-10-02T10:01:00Z","chunk_id":"flight"}
{"type":"tool_call","name":"get_weather","args":{"city":"Lisbon"},"result":"22C and sunny","status":"ok","session":"trip","role":"tool","time":"2023-10-02T10:02:00Z","chunk_id":"weather"}
{"session":"home","role":"user","content":"Yesterday I finally sold the old piano to a neighbour","meta":{"project":"zeus"},"time":"2023-10-04T09:00:00Z","chunk_id":"piano"}
{"session":"home","role":"user","content":"The old piano was tuned in spring","time":"2023-06-04T09:00:00Z","chunk_id":"tuned"}
`, "append")
	must(t, dir, "", "edit", "flight", "Book the noon flight to Lisbon")
	must(t, dir, `{"session":"trip","role":"user","content":"Porto fares are cheaper than Lisbon fares now","supersedes":["fares"],"time":"2023-10-03T10:00:00Z","chunk_id":"porto"}
{"session":"x","content":"a secret about Lisbon","time":"2023-10-03T11:00:00Z","chunk_id":"secret"}
`, "append")
	must(t, dir, "", "tombstone", "--chunk", "secret", "--reason", "test")
	return dir
}

func resultIDs(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	for _, r := range jsonDoc(t, out)["results"].([]any) {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	return ids
}

// Typos, mentioned dates, --meta, --diverse and --as-of through the
// binary.
func TestSearchFeaturesCLI(t *testing.T) {
	t.Parallel()
	dir := searchFixture(t)
	now := "--now=2023-10-10T12:00:00Z"
	// A misspelled query finds its item.
	if ids := resultIDs(t, must(t, dir, "", "--json", "query", "Lisbn fars", now, "--include-superseded")); len(ids) == 0 || (ids[0] != "fares" && ids[0] != "porto") {
		t.Fatalf("Lisbn fars: %v", ids)
	}
	// The "yesterday" turn is found by the date it mentions.
	out := must(t, dir, "", "--json", "query", "what about the old piano on October 3, 2023", now, "--explain", "--tz", "UTC")
	if ids := resultIDs(t, out); len(ids) == 0 || ids[0] != "piano" {
		t.Fatalf("piano on October 3: %v", ids)
	}
	// --meta filters (AND of pairs).
	if ids := resultIDs(t, must(t, dir, "", "--json", "query", "Lisbon piano", now, "--meta", "project=apollo", "--include-superseded")); !reflect.DeepEqual(ids, []string{"fares"}) {
		t.Fatalf("--meta project=apollo: %v", ids)
	}
	if ids := resultIDs(t, must(t, dir, "", "--json", "query", "Lisbon", now, "--meta", "project=apollo", "--meta", "x=y")); len(ids) != 0 {
		t.Fatalf("--meta AND: %v", ids)
	}
	if r := ucl(t, dir, "", "query", "Lisbon", "--meta", "novalue"); r.code == 0 || !strings.Contains(strings.ToLower(r.err), "key=value") {
		t.Fatalf("bad --meta: %s", r)
	}
	// --diverse re-ranks (MMR ranks in --explain).
	out = must(t, dir, "", "--json", "query", "Lisbon fares", now, "--diverse", "--explain")
	if !strings.Contains(out, `"mmr_rank"`) {
		t.Fatalf("--diverse: no MMR ranks in %s", out)
	}
	if r := ucl(t, dir, "", "query", "Lisbon", "--mmr", "1.5"); r.code == 0 {
		t.Fatalf("--mmr 1.5 accepted: %s", r)
	}
	// --as-of: before the edit the old text, before the tombstone the
	// secret; now neither.
	old := must(t, dir, "", "query", "flight Lisbon", now, "--as-of", "2")
	if !strings.Contains(old, "9am") || strings.Contains(old, "noon") {
		t.Fatalf("as of 2: %s", old)
	}
	if cur := must(t, dir, "", "query", "flight Lisbon", now); strings.Contains(cur, "9am") || !strings.Contains(cur, "noon") {
		t.Fatalf("now: %s", cur)
	}
	if then := must(t, dir, "", "query", "secret Lisbon", now, "--as-of", "8"); !strings.Contains(then, "a secret") {
		t.Fatalf("as of 8 (before the tombstone): %s", then)
	}
	if cur := must(t, dir, "", "query", "secret Lisbon", now); strings.Contains(cur, "a secret") {
		t.Fatalf("tombstoned secret returned: %s", cur)
	}
	if r := ucl(t, dir, "", "query", "Lisbon", "--as-of", "999"); r.code == 0 {
		t.Fatalf("--as-of past the head accepted: %s", r)
	}
	// get and session show --as-of: the flight before its edit, the
	// secret before its tombstone, the trip before the porto turn.
	if got := must(t, dir, "", "get", "flight", "--as-of", "2"); got != "Book the 9am flight to Lisbon" {
		t.Fatalf("get flight --as-of 2: %q", got)
	}
	if got := must(t, dir, "", "get", "secret", "--as-of", "8"); got != "a secret about Lisbon" {
		t.Fatalf("get secret --as-of 8: %q", got)
	}
	if r := ucl(t, dir, "", "get", "secret"); r.code == 0 {
		t.Fatalf("tombstoned secret returned by get: %s", r)
	}
	trip := must(t, dir, "", "--json", "session", "show", "trip", "--as-of", "3")
	if !strings.Contains(trip, "9am") || strings.Contains(trip, "Porto") || strings.Contains(trip, "noon") {
		t.Fatalf("session show trip --as-of 3: %s", trip)
	}
	if cur := must(t, dir, "", "--json", "session", "show", "trip"); !strings.Contains(cur, "Porto") || strings.Contains(cur, "9am") {
		t.Fatalf("session show trip: %s", cur)
	}
}

// `ucl replay` output appends into a fresh store and reproduces every
// event: content, sessions, roles, kinds, times, meta, tool calls,
// edits, supersedes and (with --include-tombstoned) tombstones. The two
// stores' replays are equal but for the chain hashes. Appending it again
// stores nothing new.
func TestReplayAppendRoundTrip(t *testing.T) {
	t.Parallel()
	src := searchFixture(t)
	strip := func(out string) []map[string]any {
		ls := jsonLines(t, out)
		for _, l := range ls {
			delete(l, "hash")
			delete(l, "prev")
		}
		return ls
	}
	full := must(t, src, "", "replay", "--include-tombstoned")
	dst := newStore(t)
	must(t, dst, full, "append")
	if a, b := strip(full), strip(must(t, dst, "", "replay", "--include-tombstoned")); !reflect.DeepEqual(a, b) {
		t.Fatalf("replays differ:\n%v\n%v", a, b)
	}
	before := must(t, dst, "", "replay")
	must(t, dst, full, "append")
	if after := must(t, dst, "", "replay"); after != before {
		t.Fatalf("re-append stored something:\n%s", after)
	}
	// The default replay withholds the tombstoned content: the copy
	// holds everything else, and queries answer the same.
	dst2 := newStore(t)
	must(t, dst2, must(t, src, "", "replay"), "append")
	for _, q := range []string{"Lisbon fares", "old piano", "weather"} {
		a := must(t, src, "", "--json", "query", q, "--now=2023-10-10T12:00:00Z")
		b := must(t, dst2, "", "--json", "query", q, "--now=2023-10-10T12:00:00Z")
		if !reflect.DeepEqual(stripSeqs(t, a), stripSeqs(t, b)) {
			t.Fatalf("%q answers differ:\n%s\n%s", q, a, b)
		}
	}
}

// stripSeqs is a query's results without their seqs (the copy without
// the tombstoned events numbers the later ones differently).
func stripSeqs(t *testing.T, out string) []any {
	rs := jsonDoc(t, out)["results"].([]any)
	for _, r := range rs {
		delete(r.(map[string]any), "seq")
	}
	return rs
}

// `ucl import` of the ChatGPT and Claude export formats: sessions per
// conversation, the kept branch only, idempotent.
func TestImportCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	gpt, claude := "../internal/importer/testdata/chatgpt-conversations.json", "../internal/importer/testdata/claude-conversations.json"
	first := jsonDoc(t, must(t, dir, "", "--json", "import", "--from", "chatgpt", gpt))
	if first["conversations"] != 2.0 || first["messages"] != 8.0 || first["stored"] != 8.0 {
		t.Fatalf("first import: %v", first)
	}
	again := jsonDoc(t, must(t, dir, "", "--json", "import", "chatgpt", gpt))
	if again["stored"] != 0.0 || again["existed"] != 8.0 {
		t.Fatalf("second import stored something: %v", again)
	}
	if c := jsonDoc(t, must(t, dir, "", "--json", "import", "claude", claude)); c["stored"] != 2.0 {
		t.Fatalf("claude import: %v", c)
	}
	out := must(t, dir, "", "--json", "query", "Lisbon fares", "--session", "chatgpt-6f1c-lisbon", "--k", "10")
	if strings.Contains(out, "regenerated away") || !strings.Contains(out, "TAP has fares") {
		t.Fatalf("chatgpt session: %s", out)
	}
	if out := must(t, dir, "", "query", "sourdough acetone"); !strings.Contains(out, "claude-3b0e8c1e-0000-4000-8000-000000000001") {
		t.Fatalf("claude session: %s", out)
	}
	if r := ucl(t, dir, "", "import", "--from", "claude", gpt); r.code == 0 || !strings.Contains(r.err, "claude export") {
		t.Fatalf("a ChatGPT file read as Claude: %s", r)
	}
	if r := ucl(t, dir, "", "import", "--from", "gemini", gpt); r.code == 0 {
		t.Fatalf("unknown format accepted: %s", r)
	}
}
