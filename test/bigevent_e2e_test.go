package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
)

// rssLimit is the peak resident memory every command must stay under on a
// store holding the largest events ucl accepts (issue 29: one 16 MB reply
// made `ucl session list` take 1-4 GB).
const rssLimit = 300 << 20

// peakRSS runs the ucl binary on dir and returns its result and its peak
// resident set (the kernel's ru_maxrss, reported by wait4: what /proc's
// VmHWM shows at exit).
func peakRSS(t *testing.T, dir, stdin string, args ...string) (result, int64) {
	t.Helper()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc on this platform")
	}
	cmd := exec.Command(plainBin(t), args...)
	cmd.Env = append(os.Environ(), "UCL_DIR="+dir, "UCL_VAULT_KEY=")
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child's own high-water mark, VmHWM in /proc/PID/status, read
	// until it exits (it only grows, so the last read is the peak up to
	// then). Not the rusage of wait4: Go starts children with vfork, and
	// Linux then counts the parent's resident set (this test process)
	// into the child's ru_maxrss.
	var peak atomic.Int64
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		path := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if kb := vmHWM(path); kb*1024 > peak.Load() {
				peak.Store(kb * 1024)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-polled
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{o.String(), e.String(), code}, peak.Load()
}

// vmHWM reads the VmHWM line (kB) of a /proc status file; 0 when the
// process is gone or the line absent.
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(ln, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

var (
	plainOnce sync.Once
	plainPath string
	plainErr  error
)

// plainBin is a ucl binary built without the race detector: under -race
// (make test) uclBin is instrumented, and the detector's shadow memory
// multiplies a process's RSS several times, which would measure the
// detector, not ucl. Without -race it is uclBin itself.
func plainBin(t *testing.T) string {
	t.Helper()
	if !raceEnabled {
		return uclBin
	}
	plainOnce.Do(func() {
		plainPath = filepath.Join(filepath.Dir(uclBin), "ucl-plain")
		cmd := exec.Command("go", "build", "-o", plainPath, "../cmd/ucl")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			plainErr = fmt.Errorf("build ucl without -race: %v\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainPath
}

// distinctWords is n bytes of words that never repeat and no sentence
// end: the worst text for the full-text index and the summaries.
func distinctWords(seed int64, n int) string {
	r := rand.New(rand.NewSource(seed))
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "w%x%d ", r.Int63(), b.Len())
	}
	return b.String()[:n]
}

// TestBigEventsBoundedMemory: a conversation turn over log.MaxEventSize is
// refused by ucl store and ucl append (nothing written, a hint to store it
// as a document), and a document over log.MaxDocumentSize by ucl store;
// the largest turn and the largest document (chunked) accepted are stored; then session list (which builds every projection), query and
// tombstone each stay under rssLimit.
func TestBigEventsBoundedMemory(t *testing.T) {
	dir := newStore(t)
	huge := distinctWords(1, 16<<20)

	r := ucl(t, dir, huge, "store", "--session", "big", "-")
	if r.code == 0 || !strings.Contains(r.err, "event too large") || !strings.Contains(r.err, "--kind document") {
		t.Fatalf("ucl store of a 16 MB turn: %s", r.String()[:min(len(r.String()), 600)])
	}
	line, _ := json.Marshal(map[string]string{"session": "big", "role": "assistant", "content": huge})
	r = ucl(t, dir, string(line)+"\n", "append", "-")
	if r.code == 0 || !strings.Contains(r.err, "event too large") || !strings.Contains(r.err, `"document"`) {
		t.Fatalf("ucl append of a 16 MB turn: %s", r.String()[:min(len(r.String()), 600)])
	}
	if out := must(t, dir, "", "status", "--json"); !strings.Contains(out, `"head_seq":0`) {
		t.Fatalf("a refused turn was written: %s", out)
	}

	// The largest turn accepted: its body (content + session "big" + role
	// + the flags, kind and lengths) is just under the bound.
	turn := distinctWords(2, log.MaxEventSize-64)
	line, _ = json.Marshal(map[string]string{"session": "big", "role": "assistant", "content": turn, "chunk_id": "big-turn"})
	res, rss := peakRSS(t, dir, string(line)+"\n", "append", "-")
	if res.code != 0 {
		t.Fatalf("append the largest turn: %s", res)
	}
	t.Logf("append (1 MiB turn): peak RSS %d MB", rss>>20)
	// A document over log.MaxDocumentSize is refused whole; the largest
	// one accepted is stored. Before the bound, a 4 MiB document of such
	// words beside the 1 MiB turn took the next session list to 330 MB.
	doc := filepath.Join(t.TempDir(), "doc.txt")
	if err := os.WriteFile(doc, []byte(huge[:log.MaxDocumentSize+1]), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _ = peakRSS(t, dir, "", "store", "--session", "big", "--kind", "document", "--file", doc)
	if res.code == 0 || !strings.Contains(res.err, "document too large") || !strings.Contains(res.err, "several documents") {
		t.Fatalf("store a document over the bound: %s", res)
	}
	if out := must(t, dir, "", "status", "--json"); !strings.Contains(out, `"head_seq":1`) {
		t.Fatalf("a refused document was written: %s", out)
	}
	if err := os.WriteFile(doc, []byte(huge[:log.MaxDocumentSize]), 0o600); err != nil {
		t.Fatal(err)
	}
	res, rss = peakRSS(t, dir, "", "store", "--session", "big", "--kind", "document", "--file", doc, "--json")
	if res.code != 0 {
		t.Fatalf("store the largest document: %s", res)
	}
	t.Logf("store (%d MiB document): peak RSS %d MB", log.MaxDocumentSize>>20, rss>>20)

	for _, args := range [][]string{
		{"session", "list", "--json"},
		{"query", strings.Fields(turn)[7], "--json"},
		{"tombstone", "--chunk", "big-turn", "--json"},
		{"session", "list", "--json"},
	} {
		res, rss := peakRSS(t, dir, "", args...)
		if res.code != 0 {
			t.Fatalf("ucl %s: %s", strings.Join(args, " "), res)
		}
		t.Logf("ucl %s: peak RSS %d MB", strings.Join(args, " "), rss>>20)
		if rss > rssLimit {
			t.Errorf("ucl %s: peak RSS %d MB, over %d MB", strings.Join(args, " "), rss>>20, rssLimit>>20)
		}
	}
}
