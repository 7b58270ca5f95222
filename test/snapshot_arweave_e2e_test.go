package test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// A rebuild through a published snapshot: device A publishes a snapshot,
// then appends more; device B's rebuild restores the snapshot, replays only
// the events after it, and ends with A's digests and replay. (Refusing a
// corrupt published snapshot is tested in package snapshot.)
func TestRebuildThroughSnapshot(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("arlocal end-to-end")
	}
	gw := arlocaltest.Start(t)
	a, _ := newDevice(t, gw, 600, "snap")
	must(t, a.dir, "", "snapshot", "create")
	// Many parts: the text summarises them, --json (the same snapshot,
	// already there) lists every one.
	out := must(t, a.dir, "", "snapshot", "push", "--gateway", gw.URL(), "--part-size", "32768")
	js := jsonDoc(t, must(t, a.dir, "", "snapshot", "push", "--gateway", gw.URL(), "--part-size", "32768", "--json"))
	parts := js["tx_ids"].([]any)
	if len(parts) <= 3 || strings.Count(out, "\n") > 3 || !strings.Contains(out, "--json lists every transaction id") ||
		!strings.Contains(out, parts[0].(string)) || strings.Contains(out, parts[1].(string)) {
		t.Fatalf("snapshot push of %d parts printed:\n%s", len(parts), out)
	}
	in, _ := genEvents(80, "delta")
	must(t, a.dir, in, "append", "-")
	must(t, a.dir, "", "sync", "push", "--gateway", gw.URL())
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	want := jsonDoc(t, must(t, a.dir, "", "project", "--json", "--digests"))
	head := headOf(t, a.dir)

	dst, r := rebuild(t, gw.URL(), a, "--json")
	if r.code != 0 {
		t.Fatalf("rebuild: %s", r)
	}
	doc := jsonDoc(t, r.out)
	snap := doc["snapshot"].(map[string]any)
	if snap["used"] != true || uint64(snap["seq"].(float64)) >= head || snap["replayed"].(float64) != float64(head)-snap["seq"].(float64) {
		t.Fatalf("snapshot not used as expected (head %d): %v", head, snap)
	}
	got := digests(t, dst)
	for _, p := range want["projections"].([]any) {
		m := p.(map[string]any)
		if got[m["name"].(string)] != m["digest"] {
			t.Fatalf("%s: rebuilt through snapshot %v, source %v", m["name"], got[m["name"].(string)], m["digest"])
		}
	}
	if !reflect.DeepEqual(must(t, dst, "", "replay"), must(t, a.dir, "", "replay")) {
		t.Fatal("replay differs")
	}
	// --no-snapshot gives the same state the long way.
	dst2, r := rebuild(t, gw.URL(), a, "--no-snapshot", "--json")
	if r.code != 0 || jsonDoc(t, r.out)["snapshot"].(map[string]any)["used"] != false {
		t.Fatalf("rebuild --no-snapshot: %s", r)
	}
	if fmt.Sprint(digests(t, dst2)) != fmt.Sprint(got) {
		t.Fatal("digests differ between snapshot and full rebuild")
	}
	if !strings.Contains(must(t, dst, "", "project", "verify"), "ok") {
		t.Fatal("project verify after snapshot rebuild")
	}
}
