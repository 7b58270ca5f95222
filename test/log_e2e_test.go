package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

const conversation = `{"type":"store","session":"s1","role":"user","kind":"conversation","content":"I want to learn the cello.","meta":{"eid":"t1"},"time":"2023-05-08T13:56:00Z"}
{"type":"store","session":"s1","role":"assistant","kind":"conversation","content":"Start with a rented instrument and a teacher.","meta":{"eid":"t2"},"time":"2023-05-08T13:57:00Z"}
{"type":"store","session":"s2","role":"user","kind":"knowledge","content":"My teacher is called Ana.","id":"fact-ana","time":"2023-05-09T10:00:00Z"}
`

func TestInitAppendReplayVerify(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	if r := ucl(t, dir, "", "init"); r.code == 0 || !strings.Contains(r.err, "already initialized") {
		t.Fatalf("second init: %s", r)
	}
	res := jsonLines(t, must(t, dir, conversation, "append", "-"))
	if len(res) != 3 || res[0]["seq"].(float64) != 1 || res[2]["seq"].(float64) != 3 {
		t.Fatalf("append results: %v", res)
	}
	// Flags after the positional argument.
	must(t, dir, "", "store", "Practice scales daily.", "--session", "s1", "--role", "assistant", "--meta", "eid=t3", "--time", "2023-05-08T13:58:00Z")
	evs := jsonLines(t, must(t, dir, "", "replay"))
	if len(evs) != 4 {
		t.Fatalf("%d events", len(evs))
	}
	if evs[0]["content"] != "I want to learn the cello." || evs[0]["meta"].(map[string]any)["eid"] != "t1" || evs[0]["content_time"] != "2023-05-08T13:56:00.000Z" {
		t.Fatalf("event 1: %v", evs[0])
	}
	if evs[3]["session"] != "s1" || evs[3]["role"] != "assistant" || evs[3]["meta"].(map[string]any)["eid"] != "t3" {
		t.Fatalf("store flags after text: %v", evs[3])
	}
	for i := 1; i < len(evs); i++ {
		if evs[i]["prev"] != evs[i-1]["hash"] {
			t.Fatalf("chain: event %d prev != event %d hash", i+1, i)
		}
	}
	// Filters.
	if got := jsonLines(t, must(t, dir, "", "replay", "--session", "s2")); len(got) != 1 {
		t.Fatalf("--session: %v", got)
	}
	if got := jsonLines(t, must(t, dir, "", "replay", "--from", "2", "--to", "3")); len(got) != 2 || got[0]["seq"].(float64) != 2 {
		t.Fatalf("--from/--to: %v", got)
	}
	out := must(t, dir, "", "audit", "verify")
	if !strings.Contains(out, "4 events verified") {
		t.Fatalf("verify: %s", out)
	}
	st := jsonDoc(t, must(t, dir, "", "status", "--json"))
	if st["events"].(float64) != 4 || st["durability"] != "sync" || len(st["wallet_address"].(string)) != 43 || len(st["log_id"].(string)) != 32 {
		t.Fatalf("status: %v", st)
	}
}

func TestIdempotentAppendCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	first := jsonLines(t, must(t, dir, conversation, "append"))
	again := jsonLines(t, must(t, dir, conversation, "append"))
	// Lines with an "id" are idempotent; lines without one are duplicates
	// of the live items with the same text (nothing written), or new
	// events with --allow-duplicate.
	if again[2]["seq"] != first[2]["seq"] || again[2]["existed"] != true {
		t.Fatalf("re-append of id'd line: %v vs %v", again[2], first[2])
	}
	if again[0]["seq"] != first[0]["seq"] || again[0]["duplicate_of"] != first[0]["id"] {
		t.Fatalf("line without id: %v vs %v", again[0], first[0])
	}
	allowed := jsonLines(t, must(t, dir, conversation, "append", "--allow-duplicate"))
	if allowed[0]["seq"].(float64) != 4 || allowed[0]["duplicate_of"] != nil {
		t.Fatalf("line without id, duplicates allowed: %v", allowed[0])
	}
	changed := strings.Replace(conversation, "My teacher is called Ana.", "My teacher is called Bea.", 1)
	r := ucl(t, dir, changed, "append")
	if r.code == 0 || !strings.Contains(r.err, "different content") {
		t.Fatalf("conflicting re-append: %s", r)
	}
}

// A bad line in an input of one batch (under 10,000 events) rejects it
// whole: the error names the line and the field, and the log is not
// touched (TestAppendBadLineMidStream: a bad line in a later batch).
func TestAppendBadLineWritesNothing(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, conversation, "append")
	for _, tc := range []struct{ input, want string }{
		{conversation + `{"content":"x","kind":"poem"}` + "\n", `line 4: field "kind"`},
		{`{"content":"ok"}` + "\n" + `{"session":"s"}` + "\n", `line 2: field "content"`},
		{`{"content":"ok"}` + "\n" + `{"content":"x","sesion":"s"}` + "\n", `line 2: field "sesion"`},
		{"{\"content\":\"ok\"}\nnot json\n", "line 2"},
		{`{"type":"share_grant"}` + "\n", `line 1: field "type"`},
		{"", "no events"},
	} {
		r := ucl(t, dir, tc.input, "append", "-")
		if r.code == 0 || !strings.Contains(r.err, tc.want) {
			t.Errorf("input %q: want %q, got %s", tc.input, tc.want, r)
		}
	}
	if n := len(jsonLines(t, must(t, dir, "", "replay"))); n != 3 {
		t.Fatalf("bad inputs wrote events: %d", n)
	}
}

// One flipped byte in a body and one in a header: audit verify names the
// seq and exits non-zero; other commands refuse to open the damaged log.
func TestFlippedByteCLI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		seq    int
		offset int // inside the event's raw bytes
	}{
		{"body", 2, log.HeaderSize + 5},
		{"header", 3, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newStore(t)
			must(t, dir, conversation, "append")
			must(t, dir, "", "store", "one more", "--session", "s3")
			flipByte(t, filepath.Join(dir, "log"), tc.seq, tc.offset)
			r := ucl(t, dir, "", "audit", "verify")
			want := "seq " + string(rune('0'+tc.seq)) + " is bad"
			if r.code == 0 || !strings.Contains(r.err, want) {
				t.Fatalf("verify: want %q, got %s", want, r)
			}
			jr := ucl(t, dir, "", "audit", "verify", "--json")
			if jr.code == 0 || jsonDoc(t, jr.out)["bad_seq"].(float64) != float64(tc.seq) {
				t.Fatalf("verify --json: %s", jr)
			}
			if r := ucl(t, dir, "", "replay"); r.code == 0 || !strings.Contains(r.err, "corrupt at seq") {
				t.Fatalf("replay of damaged log: %s", r)
			}
		})
	}
}

// segmentFile returns the path and bytes of the log's (single) segment file.
func segmentFile(t *testing.T, logDir string) (string, []byte) {
	t.Helper()
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var seg string
	for _, e := range ents {
		if len(e.Name()) == 20 {
			seg = filepath.Join(logDir, e.Name())
		}
	}
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	return seg, b
}

// flipByte flips one bit of event seq at offset within its raw bytes, by
// walking the tidwall/wal framing of the single segment file.
func flipByte(t *testing.T, logDir string, seq, offset int) {
	t.Helper()
	seg, b := segmentFile(t, logDir)
	off := 0
	for i := 1; ; i++ {
		n, k := uvarint(b[off:])
		if i == seq {
			b[off+k+offset] ^= 0x10
			break
		}
		off += k + int(n)
	}
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	var s uint
	for i, c := range b {
		if c < 0x80 {
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}

func TestWrongVaultKeyWritesNothing(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, conversation, "append")
	other := newStore(t)
	before := must(t, dir, "", "replay")
	r := ucl(t, dir, "", "store", "sneaky", "--vault-key", filepath.Join(other, "vault.key"))
	if r.code == 0 || !strings.Contains(r.err, "vault key does not belong to this store") {
		t.Fatalf("wrong key: %s", r)
	}
	if after := must(t, dir, "", "replay"); after != before {
		t.Fatal("log changed after a wrong-key attempt")
	}
	// Key export/import round trip; an auditor without the key gets raw headers.
	code := strings.TrimSpace(must(t, dir, "", "keys", "export"))
	if !strings.HasPrefix(code, "UCL1-") {
		t.Fatalf("recovery code %q", code)
	}
	os.Rename(filepath.Join(dir, "vault.key"), filepath.Join(dir, "vault.key.bak"))
	if r := ucl(t, dir, "", "replay"); r.code == 0 {
		t.Fatalf("replay without key: %s", r)
	}
	raw := jsonLines(t, must(t, dir, "", "replay", "--raw"))
	if len(raw) != 3 || raw[0]["content"] != nil || raw[0]["hash"] == nil {
		t.Fatalf("raw replay: %v", raw)
	}
	if out := must(t, dir, "", "audit", "verify"); !strings.Contains(out, "3 events verified (checksums and hash chain)") {
		t.Fatalf("keyless verify: %s", out)
	}
	if r := ucl(t, dir, "", "keys", "import", must(t, other, "", "keys", "export")); r.code == 0 {
		t.Fatalf("imported another store's key: %s", r)
	}
	must(t, dir, "", "keys", "import", code)
	if got := must(t, dir, "", "replay"); got != before {
		t.Fatal("replay differs after key import")
	}
}

// While one process holds the store, the CLI is refused with a clear error.
func TestSecondProcessRefusedCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	l, err := log.Open(filepath.Join(dir, "log"), log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := ucl(t, dir, "", "store", "hello")
	if r.code == 0 || !strings.Contains(r.err, "in use by another process") {
		t.Fatalf("second process: %s", r)
	}
	l.Close()
	must(t, dir, "", "store", "hello")
	_ = context.Background()
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, 2},
		{[]string{"replay", "--nope"}, "ucl replay has no flag --nope", 2},
		{[]string{"store", "x", "--kind", "poem"}, "conversation, document, knowledge or tool_call", 2},
		{[]string{"store", "x", "--time", "noon-ish"}, "cannot parse time", 2},
		{[]string{"store", "  "}, "nothing to store", 2},
		{[]string{"replay", "--type", "nope"}, "unknown event type", 2},
		{[]string{"replay", "--from", "5", "--to", "2"}, "empty range", 2},
	} {
		r := ucl(t, dir, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.err, tc.want) || !strings.Contains(r.err, "ucl: ") {
			t.Errorf("%v: want exit %d and %q, got %s", tc.args, tc.code, tc.want, r)
		}
	}
	if r := ucl(t, filepath.Join(t.TempDir(), "none"), "", "replay"); r.code != 1 || !strings.Contains(r.err, "ucl init") {
		t.Errorf("uninitialized store: %s", r)
	}
}

// A flipped bit in the length prefix of an event in the last segment used
// to be cut silently as a torn tail on the next open, with everything after
// it. Now every command refuses and points to `ucl audit repair`, which cuts
// only when asked and says exactly what.
func TestFlippedLengthNeedsExplicitRepairCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, conversation, "append")
	must(t, dir, "", "store", "one more", "--session", "s3")
	logDir := filepath.Join(dir, "log")
	seg, b := segmentFile(t, logDir)
	off := 0
	for i := 1; i < 2; i++ {
		n, k := uvarint(b[off:])
		off += k + int(n)
	}
	_, k := uvarint(b[off:])
	b[off+k-1] ^= 0x08 // the length of event 2 grows by 1024 << 7(k-1)
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := ucl(t, dir, "", "replay")
	if r.code == 0 || !strings.Contains(r.err, "seq 2") || !strings.Contains(r.err, "ucl audit repair") {
		t.Fatalf("replay of a log with a damaged length: %s", r)
	}
	if after, _ := os.ReadFile(seg); string(after) != string(b) {
		t.Fatal("a refused command changed the log")
	}
	rep := must(t, dir, "", "audit", "repair", "--json")
	doc := jsonDoc(t, rep)
	report, _ := doc["report"].(map[string]any)
	if doc["repaired"] != true || report["from_seq"].(float64) != 2 || report["head"].(float64) != 1 {
		t.Fatalf("repair: %s", rep)
	}
	if len(report["saved_to"].([]any)) == 0 {
		t.Fatalf("repair kept nothing aside: %s", rep)
	}
	must(t, dir, "", "audit", "verify")
	if n := len(jsonLines(t, must(t, dir, "", "replay"))); n != 1 {
		t.Fatalf("%d events after repair", n)
	}
}

// Secrets: a mistyped recovery code is never echoed; a corrupt wallet is
// called corrupt, not missing.
func TestSecretsAndCorruptWalletCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	code := strings.TrimSpace(must(t, dir, "", "keys", "export"))
	if !strings.HasPrefix(code, "UCL1-") {
		t.Fatalf("export: %q", code)
	}
	typo := []byte(code)
	i := len(typo) - 3
	if typo[i] == 'A' {
		typo[i] = 'B'
	} else {
		typo[i] = 'A'
	}
	r := ucl(t, dir, "", "keys", "import", string(typo))
	if r.code == 0 {
		t.Fatal("a mistyped code was imported")
	}
	for _, part := range strings.Split(code, "-")[1:6] {
		if strings.Contains(r.out+r.err, part) {
			t.Fatalf("import echoed key material: %s", r)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "wallet.json"), []byte(`{"kty":"RSA","n":`), 0o600); err != nil {
		t.Fatal(err)
	}
	r = ucl(t, dir, "", "sync", "push", "--gateway", "http://127.0.0.1:1")
	if r.code == 0 || !strings.Contains(r.err, "corrupt") || strings.Contains(r.err, "no Arweave wallet") {
		t.Fatalf("push with a corrupt wallet: %s", r)
	}
}

// `ucl append` streams its input in batches: an id conflict on a late line
// fails that line's batch only, and the error says exactly what the earlier
// batches wrote.
func TestLargeAppendConflictReportsWritten(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, `{"content":"the original","id":"late"}`+"\n", "append")
	var b strings.Builder
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&b, `{"content":"turn %d","session":"big"}`+"\n", i)
	}
	b.WriteString(`{"content":"not the original","id":"late"}` + "\n")
	// Batches of 2: lines 1..4 are written before the conflict on line 6
	// is found; the error says so, and nothing of the last batch is written.
	r := ucl(t, dir, b.String(), "append", "--batch-events", "2")
	if r.code == 0 || !strings.Contains(r.err, "lines 5..6 were not written") ||
		!strings.Contains(r.err, "lines 1..4 of the input were appended (4 results, 4 new events, seqs 2..5)") {
		t.Fatalf("append with a late conflict: %s", r)
	}
	if n := len(jsonLines(t, r.out)); n != 4 {
		t.Fatalf("%d results printed, want the 4 written: %s", n, r)
	}
	if n := len(jsonLines(t, must(t, dir, "", "replay"))); n != 5 {
		t.Fatalf("%d events after the conflict, want 5", n)
	}
}

// audit show: one event's header and body, and a tombstoned event's
// content withheld with the status that it is hidden, not erased.
func TestAuditShowCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, "", "store", "keep this note", "--session", "a", "--chunk-id", "keep")
	must(t, dir, "", "store", "forget this note", "--session", "a", "--chunk-id", "gone")
	must(t, dir, "", "tombstone", "--chunk", "gone", "--reason", "asked")
	live := jsonDoc(t, must(t, dir, "", "audit", "show", "1", "--json"))
	if live["status"] != "live" || live["chunk_id"] != "keep" || !strings.Contains(fmt.Sprint(live["event"]), "keep this note") || len(live["header"].(string)) != 2*log.HeaderSize {
		t.Fatalf("show of a live event: %v", live)
	}
	gone := jsonDoc(t, must(t, dir, "", "audit", "show", "2", "--json"))
	if gone["tombstoned_by"].(float64) != 3 || !strings.Contains(gone["status"].(string), "not erased") || strings.Contains(fmt.Sprint(gone["event"]), "forget this note") {
		t.Fatalf("show of a tombstoned event: %v", gone)
	}
	text := must(t, dir, "", "audit", "show", "3")
	if !strings.Contains(text, "tombstone") || !strings.Contains(text, "reason \"asked\"") {
		t.Fatalf("show of the tombstone: %s", text)
	}
	if r := ucl(t, dir, "", "audit", "show", "99"); r.code == 0 || !strings.Contains(r.err, "head is 3") {
		t.Fatalf("show past the head: %s", r)
	}
}
