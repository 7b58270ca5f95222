package test

import (
	"strings"
	"testing"
)

// Tombstones reach every projection and replay; project verify agrees with
// a fresh rebuild; sessions list and show read the timelines.
func TestProjectionsAndTombstoneCLI(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	must(t, dir, conversation, "append")
	must(t, dir, "", "store", "--session", "s3", "--time", "2023-07-01T10:00:00Z", "Cello strings should be replaced yearly.")
	st := jsonDoc(t, must(t, dir, "", "project", "--json"))
	for _, p := range st["projections"].([]any) {
		m := p.(map[string]any)
		if m["checkpoint"].(map[string]any)["seq"].(float64) != 4 || m["behind"].(float64) != 0 {
			t.Fatalf("projection not caught up: %v", m)
		}
	}
	sessions := jsonDoc(t, must(t, dir, "", "session", "list", "--json"))["sessions"].([]any)
	if len(sessions) != 3 || sessions[0].(map[string]any)["id"] != "s3" {
		t.Fatalf("sessions: %v", sessions)
	}
	show := must(t, dir, "", "session", "show", "s1")
	if !strings.Contains(show, "I want to learn the cello.") || !strings.Contains(show, "rented instrument") {
		t.Fatalf("session show: %s", show)
	}
	r := ucl(t, dir, "", "tombstone", "--session", "s1", "--reason", "privacy")
	if r.code != 0 || !strings.Contains(r.out, "removed 2 chunk(s)") || !strings.Contains(r.err, "not erasure") {
		t.Fatalf("tombstone: %s", r)
	}
	if r := ucl(t, dir, "", "session", "show", "s1"); r.code == 0 {
		t.Fatalf("tombstoned session still shown: %s", r)
	}
	audit := jsonLines(t, must(t, dir, "", "audit", "log", "--json", "--type", "tombstone"))
	if len(audit) != 1 || len(audit[0]["removed"].([]any)) != 2 || audit[0]["erasure"] != "pending" || audit[0]["reason"] != "privacy" {
		t.Fatalf("audit log: %v", audit)
	}
	replay := must(t, dir, "", "replay")
	if strings.Contains(replay, "learn the cello") || strings.Count(replay, `"tombstoned":true`) != 2 {
		t.Fatalf("replay shows tombstoned content: %s", replay)
	}
	if !strings.Contains(must(t, dir, "", "replay", "--include-tombstoned"), "learn the cello") {
		t.Fatal("--include-tombstoned hides content")
	}
	out := must(t, dir, "", "project", "verify")
	if !strings.Contains(out, "ok: a fresh rebuild gives the same digests") {
		t.Fatalf("verify: %s", out)
	}
	// Verify leaves its digests for status to report without computing.
	verified := jsonDoc(t, must(t, dir, "", "project", "verify", "--json"))["digests"].(map[string]any)
	before := jsonDoc(t, must(t, dir, "", "project", "status", "--json"))
	for _, p := range before["projections"].([]any) {
		m := p.(map[string]any)
		if d := verified[m["name"].(string)]; d == nil || m["digest"] != d {
			t.Fatalf("%s: status digest %v after verify's %v", m["name"], m["digest"], d)
		}
	}
	// Rebuild gives the same digests as the incremental state; a status
	// computes none unless asked (--digests).
	must(t, dir, "", "project", "rebuild")
	if out := must(t, dir, "", "project", "status"); !strings.Contains(out, "not computed") {
		t.Fatalf("status after a rebuild shows digests it did not compute:\n%s", out)
	}
	after := jsonDoc(t, must(t, dir, "", "project", "status", "--json", "--digests"))
	for i, p := range before["projections"].([]any) {
		a := after["projections"].([]any)[i].(map[string]any)
		if p.(map[string]any)["digest"] != a["digest"] {
			t.Fatalf("%s: digest changed by rebuild", a["name"])
		}
	}
	if r := ucl(t, dir, "", "project", "rebuild", "--only", "nope"); r.code == 0 {
		t.Fatalf("rebuild of unknown projection: %s", r)
	}
	if r := ucl(t, dir, "", "tombstone"); r.code != 2 || !strings.Contains(r.err, "no targets") {
		t.Fatalf("empty tombstone: %s", r)
	}
}
