package test

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestAppendDedupAcrossBatches (issue 26): a streamed `ucl append` takes
// out duplicates exactly as one request did: of live items already in the
// log, of lines in earlier batches of the same input, and of lines in the
// same batch; in the process that owns the store and through an owner
// daemon. What the duplicate index holds in memory and has not written
// yet is not lost to the check when its process dies: the log has it.
func TestAppendDedupAcrossBatches(t *testing.T) {
	for _, viaDaemon := range []bool{false, true} {
		t.Run(fmt.Sprintf("daemon=%v", viaDaemon), func(t *testing.T) {
			t.Parallel()
			dir := newStore(t)
			var daemon *exec.Cmd
			if viaDaemon {
				daemon = startDaemon(t, dir)
			}
			line := func(content string) string {
				return fmt.Sprintf(`{"session":"s","role":"user","content":%q}`, content)
			}
			first := jsonLines(t, must(t, dir, line("alpha one")+"\n"+line("alpha two")+"\n", "append", "--json", "-"))
			if len(first) != 2 {
				t.Fatalf("first append: %v", first)
			}
			in := []string{
				line("Beta"),         // 1: new            (batch 1)
				line("ALPHA   one"),  // 2: the log's item (batch 1)
				line("gamma"),        // 3: new            (batch 2)
				line("beta"),         // 4: line 1         (batch 2)
				line(" Gamma\u200b"), // 5: line 3         (batch 3)
				line("delta"),        // 6: new            (batch 3)
				line("DELTA"),        // 7: line 6         (batch 4)
				line("alpha two"),    // 8: the log's item (batch 4)
			}
			out := jsonLines(t, must(t, dir, strings.Join(in, "\n")+"\n", "append", "--batch-events", "2", "--json", "-"))
			if len(out) != len(in) {
				t.Fatalf("%d results for %d lines: %v", len(out), len(in), out)
			}
			id := func(r map[string]any) string { s, _ := r["id"].(string); return s }
			want := map[int]map[string]any{2: first[0], 4: out[0], 5: out[2], 7: out[5], 8: first[1]}
			for i, r := range out {
				of, isDup := want[i+1]
				switch {
				case !isDup && r["duplicate_of"] != nil:
					t.Errorf("line %d %s: reported as a duplicate: %v", i+1, in[i], r)
				case isDup && (r["duplicate_of"] != id(of) || r["seq"] != of["seq"]):
					t.Errorf("line %d %s: %v, want a duplicate of %v", i+1, in[i], r, of)
				}
			}
			if n := len(jsonLines(t, must(t, dir, "", "replay"))); n != 5 {
				t.Fatalf("%d events in the log, want 5 (2 + 3 new)", n)
			}
			if viaDaemon {
				// The owner dies (killed: nothing written at exit) holding
				// the index's last writes; the next process, owning the
				// store itself, finds the stream's items all the same.
				daemon.Process.Signal(syscall.SIGKILL)
				daemon.Wait()
			}
			again := jsonLines(t, must(t, dir, line("Delta ")+"\n"+line("gamma")+"\n", "append", "--json", "-"))
			if len(again) != 2 || again[0]["duplicate_of"] != id(out[5]) || again[1]["duplicate_of"] != id(out[2]) {
				t.Fatalf("after the stream: %v, want duplicates of %s and %s", again, id(out[5]), id(out[2]))
			}
		})
	}
}
