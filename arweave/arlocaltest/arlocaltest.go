// Package arlocaltest starts a real arlocal (a local Arweave gateway, npm
// arlocal 1.1.66 installed by `make arlocal` into test/arlocal) for tests and
// benchmarks.
//
// Each Gateway is one node process on a free loopback port with its own
// temporary database directory. arlocal joins --dbpath to its working
// directory even when the path is absolute, so the process is started in the
// temp directory's parent with a relative name. Stop kills the whole process
// group and removes the directory.
//
// Start (for tests) skips the test only when `node` is not on PATH; a missing
// node_modules or a gateway that does not come up fails the test.
package arlocaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ErrNoNode is returned by StartProcess when the node binary is not on PATH.
var ErrNoNode = errors.New("arlocaltest: node not found on PATH")

// ErrNotInstalled is returned when arlocal is not installed in test/arlocal.
var ErrNotInstalled = errors.New("arlocaltest: arlocal not installed (run `make arlocal`)")

// Options configures StartProcess. The zero value is usable.
type Options struct {
	// RepoRoot is the module root; empty means walk up from the working
	// directory to the first go.mod.
	RepoRoot string
	// StartTimeout bounds the wait for GET /info (default 60s).
	StartTimeout time.Duration
	// Log receives arlocal's stdout and stderr. When nil, arlocal runs with
	// --hidelogs (it otherwise logs every transaction with its data).
	Log io.Writer
	// HideLogs runs arlocal with --hidelogs even when Log is set: Log then
	// receives only what arlocal prints besides its transaction log
	// (start-up lines, errors, a crash's stack).
	HideLogs bool
}

// Gateway is a running arlocal.
type Gateway struct {
	url  string
	cmd  *exec.Cmd
	dir  string
	hc   *http.Client
	once sync.Once
	done chan struct{}
	err  error // process exit error, valid after done is closed
}

// Start starts arlocal for tb and stops it in tb.Cleanup. When tb fails,
// its log says whether arlocal had exited (and how) or still answered,
// and holds arlocal's last output: a gateway that stops answering in the
// middle of a test is otherwise indistinguishable from a client fault.
func Start(tb testing.TB) *Gateway {
	tb.Helper()
	tail := &tailWriter{max: 16 << 10}
	g, err := StartProcess(context.Background(), Options{Log: tail, HideLogs: true})
	if errors.Is(err, ErrNoNode) {
		tb.Skipf("skipping: %v (install Node.js to run the Arweave tests)", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(g.Stop)
	// Registered after Stop, so it runs before it (cleanups run last in,
	// first out): arlocal is still as the test left it.
	tb.Cleanup(func() {
		if !tb.Failed() {
			return
		}
		select {
		case <-g.done:
			tb.Logf("arlocal at %s had exited before the test ended: %v", g.url, g.err)
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := g.get(ctx, "/info")
			cancel()
			tb.Logf("arlocal at %s was running when the test ended; GET /info: %v", g.url, errOrOK(err))
		}
		if out := tail.String(); out != "" {
			tb.Logf("arlocal's last output:\n%s", out)
		}
	})
	return g
}

func errOrOK(err error) any {
	if err == nil {
		return "ok"
	}
	return err
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// FindRepoRoot walks up from the working directory to the directory that
// holds go.mod.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repo root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repo root: no go.mod above the working directory")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartProcess starts arlocal and waits until it answers GET /info.
func StartProcess(ctx context.Context, opt Options) (*Gateway, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, ErrNoNode
	}
	root := opt.RepoRoot
	if root == "" {
		if root, err = FindRepoRoot(); err != nil {
			return nil, err
		}
	}
	bin := filepath.Join(root, "test", "arlocal", "node_modules", "arlocal", "bin", "index.js")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w: %s missing", ErrNotInstalled, bin)
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = 60 * time.Second
	}
	args := []string{bin, "PORT", "--dbpath", "DIR"}
	if opt.Log == nil {
		opt.Log = io.Discard
		opt.HideLogs = true
	}
	if opt.HideLogs {
		// arlocal logs every posted transaction, data included; writing
		// that to a pipe costs more than the upload itself.
		args = append(args, "--hidelogs")
	}
	dir, err := os.MkdirTemp("", "arlocal-*")
	if err != nil {
		return nil, fmt.Errorf("start arlocal: %w", err)
	}
	// arlocal joins --dbpath to its cwd even when absolute: run it in the
	// parent of dir and pass dir's base name.
	args[3] = filepath.Base(dir)
	var lastErr error
	for try := 0; try < 3; try++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start arlocal: pick port: %w", err)
		}
		g := &Gateway{
			url:  "http://127.0.0.1:" + strconv.Itoa(port),
			dir:  dir,
			hc:   &http.Client{Timeout: 30 * time.Second},
			done: make(chan struct{}),
		}
		args[1] = strconv.Itoa(port)
		g.cmd = exec.Command(node, args...)
		g.cmd.Dir = filepath.Dir(dir)
		g.cmd.Stdout, g.cmd.Stderr = opt.Log, opt.Log
		g.cmd.SysProcAttr = procAttr()
		if err := g.cmd.Start(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start arlocal: %w", err)
		}
		go func() { g.err = g.cmd.Wait(); close(g.done) }()
		if lastErr = g.wait(ctx, opt.StartTimeout); lastErr == nil {
			return g, nil
		}
		g.kill()
		if ctx.Err() != nil {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("start arlocal: %w", lastErr)
}

func (g *Gateway) wait(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-g.done:
			return fmt.Errorf("arlocal exited early: %v", g.err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if _, err := g.get(ctx, "/info"); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("arlocal at %s did not answer /info within %s", g.url, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (g *Gateway) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

// URL returns the gateway's base URL (http://127.0.0.1:PORT).
func (g *Gateway) URL() string { return g.url }

// Mint credits addr with winston (arlocal refuses data from unfunded wallets).
func (g *Gateway) Mint(addr string, winston uint64) error {
	if _, err := g.get(context.Background(), "/mint/"+addr+"/"+strconv.FormatUint(winston, 10)); err != nil {
		return fmt.Errorf("mint: %w", err)
	}
	return nil
}

// Mine mines n blocks, confirming every pending transaction.
func (g *Gateway) Mine(n int) error {
	if _, err := g.get(context.Background(), "/mine/"+strconv.Itoa(n)); err != nil {
		return fmt.Errorf("mine: %w", err)
	}
	return nil
}

func (g *Gateway) kill() {
	if g.cmd.Process != nil {
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
	}
}

// Stop kills arlocal's process group and removes its database directory.
// It is safe to call more than once.
func (g *Gateway) Stop() {
	g.once.Do(func() {
		g.kill()
		os.RemoveAll(g.dir)
	})
}
