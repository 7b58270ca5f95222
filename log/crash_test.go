package log

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
)

// TestMain doubles as the crash writer: with UCL_CRASH_WRITER set, the test
// binary appends until it is killed, printing "ack SEQ HASH" for each
// acknowledged event.
func TestMain(m *testing.M) {
	if dir := os.Getenv("UCL_CRASH_WRITER"); dir != "" {
		crashWriter(dir)
		return
	}
	if dir := os.Getenv("UCL_BATCH_WRITER"); dir != "" {
		batchWriter(dir)
		return
	}
	if dir := os.Getenv("UCL_FSIZE_WRITER"); dir != "" {
		fsizeWriter(dir)
		return
	}
	os.Exit(m.Run())
}

func crashWriter(dir string) {
	kr, err := crypto.LoadKeyring(filepath.Join(dir, "vault.key"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	d, _ := ParseDurability(os.Getenv("UCL_CRASH_DURABILITY"))
	l, err := Open(filepath.Join(dir, "log"), Options{Keys: kr, Durability: d, SegmentSize: 32 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				var rs []Result
				var err error
				if i%5 == 0 {
					rs, err = l.AppendBatch(ctx, []Entry{storeEntry(i), storeEntry(i + 1), storeEntry(i + 2)})
				} else {
					var r Result
					r, err = l.Append(ctx, storeEntry(w*1000000+i))
					rs = []Result{r}
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				mu.Lock()
				for _, r := range rs {
					fmt.Fprintf(out, "ack %d %s\n", r.Seq, r.Hash)
				}
				out.Flush()
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
}

// Kill -9 a real writer process at random moments; every acknowledged seq
// must be there after reopen, with the same hash, and the chain must verify.
func TestCrashKill9(t *testing.T) {
	trials := 24
	if testing.Short() {
		trials = 6
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for trial := 0; trial < trials; trial++ {
		dur := []string{"sync", "group"}[trial%2]
		t.Run(fmt.Sprintf("%d-%s", trial, dur), func(t *testing.T) {
			dir := t.TempDir()
			kr := testKeys(t)
			if err := kr.Save(filepath.Join(dir, "vault.key")); err != nil {
				t.Fatal(err)
			}
			acked := map[uint64]string{}
			// Several crash/reopen rounds on the same store.
			for round := 0; round < 2; round++ {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "UCL_CRASH_WRITER="+dir, "UCL_CRASH_DURABILITY="+dur)
				stdout, _ := cmd.StdoutPipe()
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				sc := bufio.NewScanner(stdout)
				lines := make(chan string, 1024)
				go func() {
					for sc.Scan() {
						lines <- sc.Text()
					}
					close(lines)
				}()
				// Wait for the first ack so the kill lands mid-stream.
				first, ok := <-lines
				if !ok {
					cmd.Wait()
					t.Fatalf("writer died: %s", stderr.String())
				}
				record(t, acked, first)
				time.Sleep(time.Duration(rng.Intn(150)) * time.Millisecond)
				cmd.Process.Signal(syscall.SIGKILL)
				for ln := range lines {
					record(t, acked, ln)
				}
				cmd.Wait()
			}
			l, err := Open(filepath.Join(dir, "log"), Options{Keys: kr})
			if err != nil {
				t.Fatalf("reopen after kill: %v", err)
			}
			defer l.Close()
			head, _ := l.Head()
			got := map[uint64]string{}
			if err := l.Records(ctx, 0, 0, func(r *Record) error {
				got[r.Header.Seq] = r.Hash.String()
				return nil
			}); err != nil {
				t.Fatalf("chain after kill: %v", err)
			}
			for seq, h := range acked {
				if got[seq] != h {
					t.Fatalf("acknowledged seq %d lost or changed (head %d)", seq, head)
				}
			}
			if len(acked) == 0 {
				t.Fatal("no acks")
			}
		})
	}
}

func record(t *testing.T, acked map[uint64]string, ln string) {
	f := strings.Fields(ln)
	if len(f) != 3 || f[0] != "ack" {
		return
	}
	seq, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatalf("bad line %q", ln)
	}
	acked[seq] = f[2]
}
