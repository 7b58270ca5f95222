package test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// `ucl audit verify` while a daemon owns the store: the owner runs the
// scan and the command prints exactly what it prints on an unowned copy,
// text and --json, sound and damaged.
func TestAuditVerifyAttached(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, conversation, "append")
	must(t, dir, "", "store", "--session", "s3", "--kind", "document", "--chunk-tokens", "40",
		strings.Repeat("The cutover plan moves the orders database on Friday night. ", 12))
	cp := copyDir(t, dir)
	startDaemon(t, dir)
	same := func(args ...string) result {
		t.Helper()
		a, b := ucl(t, dir, "", args...), ucl(t, cp, "", args...)
		if a.code != b.code || a.out != b.out || a.err != b.err {
			t.Fatalf("ucl %v differs attached vs unowned:\nattached %s\nunowned  %s", args, a, b)
		}
		if strings.Contains(a.err, "in use") {
			t.Fatalf("ucl %v: %s", args, a)
		}
		return a
	}
	if r := same("audit", "verify"); r.code != 0 || !strings.HasPrefix(r.out, "ok: ") {
		t.Fatalf("audit verify: %s", r)
	}
	if r := same("audit", "verify", "--json"); r.code != 0 || jsonDoc(t, r.out)["ok"] != true {
		t.Fatalf("audit verify --json: %s", r)
	}
	// The answer came from the owner: it still owns the store.
	if r := ucl(t, dir, "", "status"); r.code != 0 {
		t.Fatalf("status through the daemon: %s", r)
	}
	// A byte flipped under the running owner, and the same in the copy.
	for _, d := range []string{dir, cp} {
		flipByte(t, filepath.Join(d, "log"), 2, log.HeaderSize+5)
	}
	r := same("audit", "verify")
	if r.code == 0 || !strings.Contains(r.err, "seq 2 is bad") {
		t.Fatalf("damaged audit verify: %s", r)
	}
	if r := same("audit", "verify", "--json"); r.code == 0 || jsonDoc(t, r.out)["bad_seq"] != float64(2) {
		t.Fatalf("damaged audit verify --json: %s", r)
	}
}
