package log

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
)

// A flipped bit in the length prefix of an entry in the last segment used
// to be taken for a torn tail: everything from that entry on was cut and
// nothing was said. Open must refuse, naming the seq; Repair cuts only when
// asked, keeps the bytes and says what it cut.
func TestFlippedLengthInLastSegmentIsNotCutSilently(t *testing.T) {
	for bit := 0; bit < 16; bit++ {
		t.Run(fmt.Sprint("bit", bit), func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "log")
			kr := testKeys(t)
			l := openT(t, dir, kr, Options{})
			appendN(t, l, 40)
			l.Close()
			p, b := lastSegment(t, dir)
			e := entryOffsets(t, b)[30] // seq 31
			k := uvarintLen(len(e.data))
			if bit/8 >= k {
				t.Skip("length prefix shorter")
			}
			b[int(e.off)+bit/8] ^= 1 << (bit % 8)
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir, Options{Keys: kr})
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Seq != 31 {
				t.Fatalf("open after a flipped length bit: %v", err)
			}
			after, _ := os.ReadFile(p)
			if string(after) != string(b) {
				t.Fatal("a refused open changed the segment")
			}
			rep, err := Repair(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if rep == nil || rep.Head != 30 || rep.Events() != 10 || len(rep.SavedTo) == 0 {
				t.Fatalf("repair report %+v", rep)
			}
			if !strings.Contains(rep.String(), "cut seqs 31..40") {
				t.Fatalf("repair does not say what it cut: %s", rep)
			}
			l = openT(t, dir, kr, Options{})
			defer l.Close()
			if head, _ := l.Head(); head != 30 {
				t.Fatalf("head %d after repair", head)
			}
			appendN(t, l, 1)
		})
	}
}

// Truncating the last segment in the middle used to look like a torn tail
// and silently cut thousands of acknowledged events.
func TestTruncatedSegmentIsRefused(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "log")
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{})
	appendN(t, l, 200)
	l.Close()
	p, b := lastSegment(t, dir)
	ents := entryOffsets(t, b)
	for _, cut := range []int64{ents[100].off + 17, ents[150].off, int64(len(b)) / 3} {
		if err := os.WriteFile(p, b[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Options{Keys: kr})
		if !errors.Is(err, ErrLost) {
			t.Fatalf("open of a log truncated at %d: %v", cut, err)
		}
	}
	// MinHead guards the same when the head mark went with the files.
	if err := os.WriteFile(p, b[:ents[150].off], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, headMarkFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Keys: kr, MinHead: 180}); !errors.Is(err, ErrLost) {
		t.Fatalf("open below MinHead: %v", err)
	}
	var warned []string
	l, err := Open(dir, Options{Keys: kr, Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if head, _ := l.Head(); head != 150 {
		t.Fatalf("head %d", head)
	}
}

// Open reads the tail, not the history: damage far behind the head mark is
// not seen by Open, but by every read that touches it and by VerifyDir.
func TestOpenVerifiesOnlyTheTail(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{SegmentSize: 4 << 10})
	appendN(t, l, 300)
	l.Close()
	segs, _ := listSegments(dir)
	if len(segs) < 5 {
		t.Fatalf("%d segments", len(segs))
	}
	p := filepath.Join(dir, segs[1].name)
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, kr, Options{SegmentSize: 4 << 10})
	if err := l.Records(ctx, 1, 0, func(*Record) error { return nil }); err == nil {
		t.Fatal("a read over damaged bytes succeeded")
	}
	l.Close()
	if _, err := VerifyDir(ctx, dir, kr, nil); err == nil {
		t.Fatal("VerifyDir missed the damage")
	}
	// Without the head mark, Open checks everything again.
	if err := os.Remove(filepath.Join(dir, headMarkFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Keys: kr}); err == nil {
		t.Fatal("a full open missed the damage")
	}
}

// Idempotency needs the id index, which a fast Open does not build: the
// first append with a client id builds it.
func TestIdempotencyAfterFastOpen(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{})
	e := storeEntry(1)
	e.ID = ID{1, 2, 3}
	r1, err := l.Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 5)
	l.Close()
	l = openT(t, dir, kr, Options{})
	defer l.Close()
	if l.idsLoaded.Load() {
		t.Fatal("open built the id index")
	}
	appendN(t, l, 2) // no client ids: no index needed, and none missed later
	r2, err := l.Append(ctx, e)
	if err != nil || !r2.Existed || r2.Seq != r1.Seq {
		t.Fatalf("re-append after fast open: %+v %v", r2, err)
	}
	e2 := storeEntry(2)
	e2.ID = ID{1, 2, 3}
	if _, err := l.Append(ctx, e2); !errors.Is(err, ErrIDConflict) {
		t.Fatalf("conflict after fast open: %v", err)
	}
	if s, ok, err := l.Lookup(ID{1, 2, 3}); err != nil || !ok || s != r1.Seq {
		t.Fatalf("lookup %d %v %v", s, ok, err)
	}
}

// On ENOSPC half of a batch used to stay in the log while the command said
// nothing was written. A failed write is rolled back before it is reported,
// and the log goes on working.
func TestFailedWriteRollsBackPartialBatch(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{SegmentSize: 4 << 10})
	appendN(t, l, 5)
	l.write = func(ps []pending) error {
		if err := l.writeWAL(ps[:len(ps)/2]); err != nil {
			return err
		}
		return syscall.ENOSPC
	}
	batch := make([]Entry, 100) // spans several segment files
	for i := range batch {
		batch[i] = storeEntry(100 + i)
	}
	_, err := l.AppendBatch(ctx, batch)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "nothing of it was written") {
		t.Fatalf("append on a full disk: %v", err)
	}
	if head, _ := l.Head(); head != 5 {
		t.Fatalf("head %d after a failed write", head)
	}
	l.write = l.writeWAL
	r, err := l.Append(ctx, storeEntry(7))
	if err != nil || r.Seq != 6 {
		t.Fatalf("append after rollback: %+v %v", r, err)
	}
	l.Close()
	l = openT(t, dir, kr, Options{})
	defer l.Close()
	if head, _ := l.Head(); head != 6 {
		t.Fatalf("head %d after reopen", head)
	}
	if n, err := VerifyDirUnlocked(dir, kr); err != nil || n != 6 {
		t.Fatalf("verify %d %v", n, err)
	}
}

// A real kernel write failure in the middle of a batch (the file size
// limit, RLIMIT_FSIZE, in a child process): nothing of the batch remains.
func TestFileSizeLimitMidBatch(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	if err := kr.Save(filepath.Join(dir, "vault.key")); err != nil {
		t.Fatal(err)
	}
	l := openT(t, filepath.Join(dir, "log"), kr, Options{SegmentSize: 64 << 10})
	appendN(t, l, 10)
	l.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "UCL_FSIZE_WRITER="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("writer: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "failed:") || !strings.Contains(string(out), "nothing of it was written") {
		t.Fatalf("writer output: %s", out)
	}
	l = openT(t, filepath.Join(dir, "log"), kr, Options{})
	defer l.Close()
	if head, _ := l.Head(); head != 10 {
		t.Fatalf("head %d after a failed batch, want 10", head)
	}
}

// fsizeWriter appends a batch larger than the file size limit allows.
func fsizeWriter(dir string) {
	kr, err := crypto.LoadKeyring(filepath.Join(dir, "vault.key"))
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	l, err := Open(filepath.Join(dir, "log"), Options{Keys: kr, SegmentSize: 64 << 10})
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	signal.Ignore(syscall.SIGXFSZ)
	lim := &syscall.Rlimit{Cur: 40 << 10, Max: 40 << 10}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, lim); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	batch := make([]Entry, 400)
	for i := range batch {
		batch[i] = storeEntry(1000 + i)
	}
	if _, err := l.AppendBatch(ctx, batch); err != nil {
		fmt.Println("failed:", err)
	} else {
		fmt.Println("appended")
	}
	if err := l.Close(); err != nil {
		fmt.Println("close:", err)
	}
}

// batchWriter appends batches of batchSize events with ids derived from
// the batch number, printing "ack BATCH" after each returns.
func batchWriter(dir string) {
	kr, err := crypto.LoadKeyring(filepath.Join(dir, "vault.key"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	start, _ := strconv.Atoi(os.Getenv("UCL_BATCH_START"))
	l, err := Open(filepath.Join(dir, "log"), Options{Keys: kr, SegmentSize: 16 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	for b := start; ; b++ {
		batch := make([]Entry, batchSize)
		for i := range batch {
			batch[i] = storeEntry(b*batchSize + i)
			batch[i].ID = batchID(b, i)
		}
		if _, err := l.AppendBatch(ctx, batch); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Fprintf(out, "ack %d\n", b)
		out.Flush()
	}
}

const batchSize = 150 // about 45 KiB: every batch spans segment files

func batchID(b, i int) ID {
	var id ID
	binary.LittleEndian.PutUint64(id[:], uint64(b)+1)
	binary.LittleEndian.PutUint64(id[8:], uint64(i)+1)
	return id
}

// Killing a writer while the WAL starts a new segment file used to leave
// part of a batch in the log. Kill -9 at segment rolls (a new file
// appearing); after reopen every batch is all there or not at all, and
// every acknowledged one is there.
func TestKillAtSegmentRollKeepsBatchesAtomic(t *testing.T) {
	trials := 20
	if testing.Short() {
		trials = 4
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for trial := 0; trial < trials; trial++ {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			dir := t.TempDir()
			kr := testKeys(t)
			if err := kr.Save(filepath.Join(dir, "vault.key")); err != nil {
				t.Fatal(err)
			}
			logDir := filepath.Join(dir, "log")
			acked := map[int]bool{}
			next := 0
			for round := 0; round < 2; round++ {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "UCL_BATCH_WRITER="+dir, "UCL_BATCH_START="+strconv.Itoa(next))
				stdout, _ := cmd.StdoutPipe()
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				lines := make(chan int, 1024)
				go func() {
					sc := bufio.NewScanner(stdout)
					for sc.Scan() {
						var b int
						if _, err := fmt.Sscanf(sc.Text(), "ack %d", &b); err == nil {
							lines <- b
						}
					}
					close(lines)
				}()
				first, ok := <-lines
				if !ok {
					cmd.Wait()
					t.Fatalf("writer died: %s", stderr.String())
				}
				acked[first] = true
				// Wait for the segment count to change a random number of
				// times, then kill at once: mid-batch, at a roll.
				segs, _ := listSegments(logDir)
				n := len(segs)
				for rolls := 1 + rng.Intn(3); rolls > 0; {
					select {
					case b, ok := <-lines:
						if !ok { // the writer died: no roll will come
							cmd.Wait()
							t.Fatalf("writer died: %s", stderr.String())
						}
						acked[b] = true
					default:
					}
					s, _ := listSegments(logDir)
					if len(s) != n {
						n = len(s)
						rolls--
						continue
					}
					time.Sleep(200 * time.Microsecond)
				}
				cmd.Process.Signal(syscall.SIGKILL)
				for b := range lines {
					acked[b] = true
				}
				cmd.Wait()
				for b := range acked {
					next = max(next, b+1)
				}
				next += 1 // the batch in flight may or may not be in
			}
			l, err := Open(logDir, Options{Keys: kr})
			if err != nil {
				t.Fatalf("reopen after kill: %v", err)
			}
			defer l.Close()
			if _, _, err := l.Lookup(ID{}); err != nil {
				t.Fatal(err)
			}
			for b := 0; b < next; b++ {
				n := 0
				for i := 0; i < batchSize; i++ {
					if _, ok := l.lookup(batchID(b, i)); ok {
						n++
					}
				}
				if n != 0 && n != batchSize {
					t.Fatalf("batch %d is partly in the log: %d of %d events", b, n, batchSize)
				}
				if acked[b] && n == 0 {
					t.Fatalf("acknowledged batch %d lost", b)
				}
			}
			if err := l.Records(ctx, 0, 0, func(*Record) error { return nil }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Inputs larger than one batch are checked whole before the first write.
func TestCheckFindsLateConflicts(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, dir, kr, Options{})
	defer l.Close()
	e := storeEntry(1)
	e.ID = ID{9}
	if _, err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	in := make([]Entry, 10)
	for i := range in {
		in[i] = storeEntry(10 + i)
	}
	if err := l.Check(in); err != nil {
		t.Fatal(err)
	}
	in[9].ID = ID{9} // same id, other content
	if err := l.Check(in); !errors.Is(err, ErrIDConflict) || !strings.Contains(err.Error(), "event 10 of 10") {
		t.Fatalf("late conflict: %v", err)
	}
	in[9].ID, in[3].ID, in[7].ID = ID{}, ID{5}, ID{5}
	if err := l.Check(in); !errors.Is(err, ErrIDConflict) || !strings.Contains(err.Error(), "also event 4") {
		t.Fatalf("conflict inside the input: %v", err)
	}
	in[7] = in[3]
	if err := l.Check(in); err != nil {
		t.Fatalf("an identical duplicate is idempotent: %v", err)
	}
	if head, _ := l.Head(); head != 1 {
		t.Fatalf("check wrote: head %d", head)
	}
}
