package test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/internal/mirror"
)

// shareEvents is A's memory: the session granted (alpha), and others that
// must never reach B. Every chunk mentions the cello, so a leak would show.
func shareEvents() string {
	var b strings.Builder
	add := func(sess, id, content string, i int) {
		ev := map[string]any{"type": "store", "session": sess, "role": "user", "kind": "conversation", "content": content,
			"chunk_id": id, "time": time.Date(2024, 3, 1, 10, i, 0, 0, time.UTC).Format(time.RFC3339)}
		line, err := json.Marshal(ev)
		if err != nil {
			panic(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	add("alpha", "alpha-0", "the cello teacher said to relax the bow arm", 0)
	add("alpha", "alpha-1", "practise cello scales slowly with a drone", 1)
	add("alpha", "alpha-2", "the cello recital is on the fifth of May", 2)
	add("beta", "beta-0", "private: my cello cost too much, do not tell anyone", 3)
	add("beta", "beta-1", "private: the cello case is in the attic", 4)
	add("gamma", "gamma-0", "a note about the cello bridge", 5)
	return b.String()
}

// queryIDs runs a query and returns the result ids with their origin and
// grantor.
func queryIDs(t *testing.T, dir, origin string) (ids []string, res []map[string]any) {
	t.Helper()
	doc := jsonDoc(t, must(t, dir, "", "query", "cello", "--origin", origin, "--k", "50", "--json"))
	for _, r := range doc["results"].([]any) {
		m := r.(map[string]any)
		ids = append(ids, m["id"].(string))
		res = append(res, m)
	}
	sort.Strings(ids)
	return ids, res
}

func mine(t *testing.T, gw *arlocaltest.Gateway) {
	t.Helper()
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
}

// A grants one session to B; B finds exactly it, marked shared from A; A's
// tombstone hides a shared chunk at B's next pull; A revokes; C finds
// nothing; forged and altered grants are rejected without touching what B
// holds; B's shared area does not open under C's wallet.
func TestShareEndToEnd(t *testing.T) {
	t.Parallel()
	gw := arlocaltest.Start(t)
	url := gw.URL()
	a, _ := newDevice(t, gw, 0, "")
	b, _ := newDevice(t, gw, 0, "")
	c, _ := newDevice(t, gw, 0, "")
	must(t, a.dir, shareEvents(), "append", "-")
	// B and C publish once, so the gateway knows their keys.
	must(t, b.dir, "", "store", "--session", "mine", "my own cello note from B")
	must(t, b.dir, "", "sync", "push", "--gateway", url)
	must(t, c.dir, "", "store", "--session", "mine", "C was here")
	must(t, c.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)

	headA := headOf(t, a.dir)
	t.Run("BadInput", func(t *testing.T) {
		unknown := make([]byte, 32)
		if _, err := rand.Read(unknown); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			args []string
			want string
		}{
			{[]string{"--to", "not-an-address", "--session", "alpha"}, "malformed Arweave address"},
			{[]string{"--to", base64.RawURLEncoding.EncodeToString(unknown), "--session", "alpha"}, "no known public key"},
			{[]string{"--to", b.addr, "--session", "no-such-session"}, "matches no live chunk"},
			{[]string{"--to", b.addr}, "empty scope"},
			{[]string{"--to", b.addr, "--session", "alpha", "--key", filepath.Join(c.dir, "wallet.json")}, "no known public key"},
		}
		for _, tc := range cases {
			args := append([]string{"share", "grant", "--gateway", url}, tc.args...)
			r := ucl(t, a.dir, "", args...)
			if r.code == 0 || !strings.Contains(r.err, tc.want) || !strings.Contains(r.err, "hint:") {
				t.Fatalf("%v: want an error with %q and a hint: %s", tc.args, tc.want, r)
			}
		}
		if h := headOf(t, a.dir); h != headA {
			t.Fatalf("bad grants wrote events: head %d, was %d", h, headA)
		}
		if r := ucl(t, a.dir, "", "share", "revoke", "00112233445566778899aabbccddeeff"); r.code == 0 || !strings.Contains(r.err, "no active share grant") {
			t.Fatalf("revoke of an unknown grant: %s", r)
		}
	})

	g := jsonDoc(t, must(t, a.dir, "", "share", "grant", "--to", b.addr, "--session", "alpha", "--note", "for the lesson", "--gateway", url, "--json"))
	grant := g["grant"].(string)
	if n := len(g["chunks"].([]any)); n != 3 || g["key_from"] != "gateway" {
		t.Fatalf("grant: %v", g)
	}
	push := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--gateway", url, "--json"))
	if push["disclosures"] != float64(1) {
		t.Fatalf("push disclosed %v grants, want 1", push["disclosures"])
	}
	mine(t, gw)

	pull := jsonDoc(t, must(t, b.dir, "", "share", "pull", "--gateway", url, "--json"))
	if pull["chunks"] != float64(3) || len(pull["grants"].([]any)) != 1 {
		t.Fatalf("pull: %v", pull)
	}
	rg := pull["grants"].([]any)[0].(map[string]any)
	if rg["grantor"] != a.addr || rg["grant"] != grant || rg["note"] != "for the lesson" || rg["status"] != "active" {
		t.Fatalf("received grant: %v", rg)
	}
	if cp := rg["checkpoint"].(map[string]any); cp["verified"] != true {
		t.Fatalf("grantor's log not checked against its checkpoint: %v", cp)
	}
	// Another device of B's wallet gets the same shared projections.
	b2 := filepath.Join(t.TempDir(), "b2")
	must(t, b2, "", "init", "--wallet", filepath.Join(b.dir, "wallet.json"))
	pull2 := jsonDoc(t, must(t, b2, "", "share", "pull", "--gateway", url, "--json"))
	if d1, d2 := fmt.Sprint(pull["digests"]), fmt.Sprint(pull2["digests"]); d1 != d2 || !strings.Contains(d1, "timelines") {
		t.Fatalf("shared digests differ between B's devices:\n%s\n%s", d1, d2)
	}
	ids, res := queryIDs(t, b.dir, "shared")
	if want := []string{"alpha-0", "alpha-1", "alpha-2"}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("B's shared results %v, want %v", ids, want)
	}
	for _, r := range res {
		if r["origin"] != "shared" || r["from"] != a.addr {
			t.Fatalf("shared result not marked as A's: %v", r)
		}
	}
	all, res := queryIDs(t, b.dir, "all")
	own := 0
	for _, r := range res {
		if r["origin"] == "own" {
			own++
		}
	}
	if len(all) != 4 || own != 1 {
		t.Fatalf("B's all results %v (%d own), want alpha-0..2 and its own note", all, own)
	}
	if ids, _ := queryIDs(t, b.dir, "own"); len(ids) != 1 {
		t.Fatalf("B's own results %v", ids)
	}
	ctxOut := must(t, b.dir, "", "context", "cello recital", "--origin", "shared")
	if !strings.Contains(ctxOut, `from="`+a.addr+`"`) || !strings.Contains(ctxOut, "recital") || strings.Contains(ctxOut, "attic") {
		t.Fatalf("B's shared context does not say whose it is, or leaks: %s", ctxOut)
	}
	// By default a context holds both: B's own note, and A's chunks named
	// as A's.
	ctxAll := must(t, b.dir, "", "context", "cello note recital")
	if !strings.Contains(ctxAll, `from="`+a.addr+`"`) || !strings.Contains(ctxAll, "my own cello note from B") {
		t.Fatalf("B's context over both origins: %s", ctxAll)
	}
	if own := must(t, b.dir, "", "context", "cello note recital", "--origin", "own"); strings.Contains(own, a.addr) {
		t.Fatalf("B's own context names A: %s", own)
	}
	// Nothing of A's entered B's own log, and nothing outside the grant
	// reached B's disk.
	if h := headOf(t, b.dir); h != 1 {
		t.Fatalf("B's log has %d events, want its own 1", h)
	}
	assertNotInDir(t, b.dir, "the cello case is in the attic", "do not tell anyone", "cello bridge")

	// A tombstones a shared chunk: B's next pull hides it.
	must(t, a.dir, "", "tombstone", "--chunk", "alpha-1")
	push = jsonDoc(t, must(t, a.dir, "", "sync", "push", "--gateway", url, "--json"))
	if push["disclosures"] != float64(1) {
		t.Fatalf("tombstone push disclosed %v, want 1", push["disclosures"])
	}
	mine(t, gw)
	pull = jsonDoc(t, must(t, b.dir, "", "share", "pull", "--gateway", url, "--json"))
	if pull["chunks"] != float64(2) {
		t.Fatalf("pull after the tombstone: %v", pull)
	}
	if ids, _ := queryIDs(t, b.dir, "shared"); fmt.Sprint(ids) != "[alpha-0 alpha-2]" {
		t.Fatalf("after A's tombstone B sees %v", ids)
	}
	assertNotInDir(t, b.dir, "practise cello scales")

	// A revokes: what B has stays, the grant says revoked.
	r := ucl(t, a.dir, "", "share", "revoke", grant)
	if r.code != 0 || !strings.Contains(r.err, "stays readable") {
		t.Fatalf("revoke: %s", r)
	}
	if r := ucl(t, a.dir, "", "share", "revoke", grant); r.code == 0 || !strings.Contains(r.err, "already revoked") {
		t.Fatalf("second revoke: %s", r)
	}
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)
	pull = jsonDoc(t, must(t, b.dir, "", "share", "pull", "--gateway", url, "--json"))
	if st := pull["grants"].([]any)[0].(map[string]any)["status"]; st != "revoked" || pull["chunks"] != float64(2) {
		t.Fatalf("after the revoke: %v", pull)
	}
	given := jsonDoc(t, must(t, a.dir, "", "share", "list", "--json"))["given"].([]any)
	if len(given) != 1 || given[0].(map[string]any)["status"] != "revoked" || given[0].(map[string]any)["sent"] != true {
		t.Fatalf("A's list: %v", given)
	}
	recv := jsonDoc(t, must(t, b.dir, "", "share", "list", "--json"))["received"].([]any)
	if len(recv) != 1 || recv[0].(map[string]any)["status"] != "revoked" {
		t.Fatalf("B's list: %v", recv)
	}

	// C was granted nothing and finds nothing.
	pullC := jsonDoc(t, must(t, c.dir, "", "share", "pull", "--gateway", url, "--json"))
	if pullC["chunks"] != float64(0) || len(pullC["grants"].([]any)) != 0 {
		t.Fatalf("C's pull: %v", pullC)
	}
	if ids, _ := queryIDs(t, c.dir, "shared"); len(ids) != 0 {
		t.Fatalf("C finds %v", ids)
	}

	// B's received grant does not open under C's wallet: a clean error.
	d := copyDir(t, b.dir)
	cw, err := os.ReadFile(filepath.Join(c.dir, "wallet.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "wallet.json"), cw, 0o600); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(d, "shared-projections"))
	if r := ucl(t, d, "", "query", "cello", "--origin", "shared"); r.code == 0 || !strings.Contains(r.err, "not for this wallet") {
		t.Fatalf("B's grants under C's wallet: %s", r)
	}
	// Searching one's own memory still works, with a warning.
	if r := ucl(t, d, "", "query", "cello", "--json"); r.code != 0 || !strings.Contains(r.err, "shared memory left out") || len(jsonDoc(t, r.out)["results"].([]any)) != 1 {
		t.Fatalf("own search beside an unreadable shared area: %s", r)
	}
	// A damaged shared area: own searches go on, a pull replaces it.
	evs, err := filepath.Glob(filepath.Join(b.dir, "shared", a.addr, "*.events"))
	if err != nil || len(evs) != 1 {
		t.Fatalf("shared events file: %v %v", evs, err)
	}
	if err := os.Chmod(evs[0], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evs[0], []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := ucl(t, b.dir, "", "query", "cello", "--origin", "own", "--json"); r.code != 0 {
		t.Fatalf("own search beside a damaged shared area: %s", r)
	}
	if r := ucl(t, b.dir, "", "query", "cello", "--json"); r.code != 0 || !strings.Contains(r.err, "shared memory left out") {
		t.Fatalf("search beside a damaged shared area: %s", r)
	}
	must(t, b.dir, "", "share", "pull", "--gateway", url)
	if ids, _ := queryIDs(t, b.dir, "shared"); fmt.Sprint(ids) != "[alpha-0 alpha-2]" {
		t.Fatalf("after a pull over a damaged area B sees %v", ids)
	}

	t.Run("Forged", func(t *testing.T) {
		before := jsonDoc(t, must(t, b.dir, "", "share", "list", "--json"))["received"]
		ctx := context.Background()
		// The grantor's real disclosure, as B's pull found it.
		cl, err := arweave.NewClient(url, nil, arweave.Options{})
		if err != nil {
			t.Fatal(err)
		}
		txs, err := mirror.FindGrants(ctx, cl, b.addr)
		if err != nil || len(txs) == 0 {
			t.Fatalf("find grants: %v %d", err, len(txs))
		}
		real, err := cl.FetchData(ctx, txs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		meta, err := mirror.ParseTags(txs[0].Tags)
		if err != nil {
			t.Fatal(err)
		}
		post := func(walletFile string, data []byte) {
			w, err := arweave.LoadWallet(walletFile)
			if err != nil {
				t.Fatal(err)
			}
			wc, err := arweave.NewClient(url, w, arweave.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := wc.Upload(ctx, data, meta.Tags()); err != nil {
				t.Fatal(err)
			}
		}
		// C re-signs A's disclosure as its own: the "grantor" is C, whose
		// log holds no such grant.
		post(filepath.Join(c.dir, "wallet.json"), real)
		// A's own wallet posts the disclosure with a flipped key byte.
		bad := append([]byte(nil), real...)
		bad[len(bad)-1] ^= 1
		post(filepath.Join(a.dir, "wallet.json"), bad)
		mine(t, gw)
		r := ucl(t, b.dir, "", "share", "pull", "--gateway", url, "--json")
		// Under --json the error is one JSON object on stderr, its hint a field.
		if r.code == 0 || !strings.Contains(r.err, "share failed verification") || !strings.Contains(r.err, `"hint":`) {
			t.Fatalf("pull with forged grants: %s", r)
		}
		doc := jsonDoc(t, r.out)
		if len(doc["rejected"].([]any)) != 2 || doc["chunks"] != float64(2) {
			t.Fatalf("pull with forged grants: %v", doc)
		}
		for _, rj := range doc["rejected"].([]any) {
			t.Logf("rejected: %v", rj)
		}
		after := jsonDoc(t, must(t, b.dir, "", "share", "list", "--json"))["received"]
		ba, _ := json.Marshal(before)
		aa, _ := json.Marshal(after)
		if string(ba) != string(aa) {
			t.Fatalf("forged grants changed what B holds:\n%s\n%s", ba, aa)
		}
		if ids, _ := queryIDs(t, b.dir, "shared"); fmt.Sprint(ids) != "[alpha-0 alpha-2]" {
			t.Fatalf("after forged grants B sees %v", ids)
		}
	})
}

// assertNotInDir fails if any file under dir contains one of the strings.
func assertNotInDir(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds %q", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A grant with --follow sends the chunks stored later in its session at
// each push, and their tombstones, until it is revoked; a grant without it
// does not.
func TestShareFollow(t *testing.T) {
	t.Parallel()
	gw := arlocaltest.Start(t)
	url := gw.URL()
	a, _ := newDevice(t, gw, 0, "")
	b, _ := newDevice(t, gw, 0, "")
	viola := func(id, text string, minute int) string {
		line, err := json.Marshal(map[string]any{"type": "store", "session": "delta", "role": "user", "content": text, "chunk_id": id,
			"time": time.Date(2024, 4, 1, 9, minute, 0, 0, time.UTC).Format(time.RFC3339)})
		if err != nil {
			t.Fatal(err)
		}
		return string(line) + "\n"
	}
	must(t, a.dir, viola("d-0", "the viola needs new strings", 0), "append", "-")
	other, err := json.Marshal(map[string]any{"type": "store", "session": "epsilon", "content": "another viola thought", "chunk_id": "e-0"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, a.dir, string(other)+"\n", "append", "-")
	key := filepath.Join(b.dir, "wallet.json")
	if r := ucl(t, a.dir, "", "share", "grant", "--to", b.addr, "--follow", "--chunk", "d-0", "--key", key); r.code == 0 || !strings.Contains(r.err, "--session") {
		t.Fatalf("--follow without --session: %s", r)
	}
	g := jsonDoc(t, must(t, a.dir, "", "share", "grant", "--to", b.addr, "--session", "delta", "--follow", "--key", key, "--json"))
	grant := g["grant"].(string)
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	// Stored after the grant, before and after a push.
	must(t, a.dir, viola("d-1", "the viola teacher moved the lesson to Tuesday", 1), "append", "-")
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	must(t, a.dir, viola("d-2", "viola rosin: the dark one", 2), "append", "-")
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)
	violaIDs := func() []string {
		var ids []string
		doc := jsonDoc(t, must(t, b.dir, "", "query", "viola", "--origin", "shared", "--k", "50", "--json"))
		for _, r := range doc["results"].([]any) {
			m := r.(map[string]any)
			if m["from"] != a.addr {
				t.Fatalf("shared result not from A: %v", m)
			}
			ids = append(ids, m["id"].(string))
		}
		sort.Strings(ids)
		return ids
	}
	must(t, b.dir, "", "share", "pull", "--gateway", url)
	if ids := violaIDs(); fmt.Sprint(ids) != "[d-0 d-1 d-2]" {
		t.Fatalf("followed session at B: %v", ids)
	}
	// A tombstone of a followed chunk hides it at the next pull.
	must(t, a.dir, "", "tombstone", "--chunk", "d-1")
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)
	must(t, b.dir, "", "share", "pull", "--gateway", url)
	if ids := violaIDs(); fmt.Sprint(ids) != "[d-0 d-2]" {
		t.Fatalf("after the tombstone B sees %v", ids)
	}
	// Revoked: what is stored afterwards is not sent.
	must(t, a.dir, "", "share", "revoke", grant)
	must(t, a.dir, viola("d-3", "viola: after the revoke", 3), "append", "-")
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)
	pull := jsonDoc(t, must(t, b.dir, "", "share", "pull", "--gateway", url, "--json"))
	if ids := violaIDs(); fmt.Sprint(ids) != "[d-0 d-2]" {
		t.Fatalf("after the revoke B sees %v", ids)
	}
	if st := pull["grants"].([]any)[0].(map[string]any); st["status"] != "revoked" || st["follow"] != true {
		t.Fatalf("received grant: %v", st)
	}
	given := jsonDoc(t, must(t, a.dir, "", "share", "list", "--json"))["given"].([]any)[0].(map[string]any)
	if given["followed"] != float64(2) || given["status"] != "revoked" {
		t.Fatalf("A's list: %v", given)
	}
	assertNotInDir(t, b.dir, "after the revoke", "another viola thought")
}

// A grantor that pushes in bundles: its segments are data items, checked
// against their own signatures like L1 segments (the rebuild's check).
func TestShareBundledGrantor(t *testing.T) {
	t.Parallel()
	gw := arlocaltest.Start(t)
	url := gw.URL()
	a, _ := newDevice(t, gw, 0, "")
	b, _ := newDevice(t, gw, 0, "")
	must(t, a.dir, shareEvents(), "append", "-")
	must(t, a.dir, "", "share", "grant", "--to", b.addr, "--session", "alpha", "--key", filepath.Join(b.dir, "wallet.json"))
	must(t, a.dir, "", "sync", "push", "--bundle", "--gateway", url)
	mine(t, gw)
	pull := jsonDoc(t, must(t, b.dir, "", "share", "pull", "--gateway", url, "--json"))
	g := pull["grants"].([]any)[0].(map[string]any)
	if pull["chunks"] != float64(3) || g["checkpoint"].(map[string]any)["verified"] != true {
		t.Fatalf("pull from a bundled grantor: %v", pull)
	}
	if ids, _ := queryIDs(t, b.dir, "shared"); fmt.Sprint(ids) != "[alpha-0 alpha-1 alpha-2]" {
		t.Fatalf("B sees %v", ids)
	}
}

// A chunk edited before the grant is shared as it reads now: B gets the
// new version and never the text the edit replaced.
func TestShareEditedChunk(t *testing.T) {
	t.Parallel()
	gw := arlocaltest.Start(t)
	url := gw.URL()
	a, _ := newDevice(t, gw, 0, "")
	b, _ := newDevice(t, gw, 0, "")
	must(t, a.dir, shareEvents(), "append", "-")
	must(t, a.dir, "", "edit", "alpha-1", "practise cello arpeggios with a metronome")
	must(t, a.dir, "", "share", "grant", "--to", b.addr, "--session", "alpha", "--key", filepath.Join(b.dir, "wallet.json"))
	must(t, a.dir, "", "sync", "push", "--gateway", url)
	mine(t, gw)
	must(t, b.dir, "", "share", "pull", "--gateway", url)
	ids, res := queryIDs(t, b.dir, "shared")
	if fmt.Sprint(ids) != "[alpha-0 alpha-1 alpha-2]" {
		t.Fatalf("B sees %v", ids)
	}
	for _, r := range res {
		if r["id"] == "alpha-1" && !strings.Contains(fmt.Sprint(r["content"]), "arpeggios") {
			t.Fatalf("B got the old version of alpha-1: %v", r)
		}
	}
	if doc := jsonDoc(t, must(t, b.dir, "", "query", "scales drone", "--origin", "shared", "--json")); len(doc["results"].([]any)) != 0 {
		t.Fatalf("the replaced text reached B: %v", doc)
	}
	if out := must(t, b.dir, "", "replay"); strings.Contains(out, "drone") {
		t.Fatalf("B's own log holds A's text: %s", out)
	}
}
