package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/store"
)

func jsonOut(c *cli.Context) bool { return c.Bool("json") }

// printJSON writes v as one JSON document.
func printJSON(c *cli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func printf(c *cli.Context, format string, a ...any) {
	fmt.Fprintf(c.App.Writer, format, a...)
}

// interactive reports whether progress bars may be drawn: not with --json,
// and only when both stdout and stderr are terminals.
func interactive(c *cli.Context) bool {
	if jsonOut(c) {
		return false
	}
	out, ok1 := c.App.Writer.(*os.File)
	errw, ok2 := c.App.ErrWriter.(*os.File)
	return ok1 && ok2 && term.IsTerminal(int(out.Fd())) && term.IsTerminal(int(errw.Fd()))
}

// progress draws a one-line bar on stderr, at most 10 times a second.
type progress struct {
	w      io.Writer
	label  string
	total  uint64
	start  time.Time
	last   time.Time
	mu     sync.Mutex
	active bool
}

func newProgress(c *cli.Context, label string, total uint64) *progress {
	return &progress{w: c.App.ErrWriter, label: label, total: total, start: time.Now(), active: interactive(c)}
}

// Set reports done units of work (of total; total 0 = unknown, updated
// when given).
func (p *progress) Set(done, total uint64) {
	if p == nil || !p.active {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if total > 0 {
		p.total = total
	}
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done != p.total {
		return
	}
	p.last = now
	rate := float64(done) / now.Sub(p.start).Seconds()
	if p.total > 0 {
		const width = 30
		frac := float64(done) / float64(p.total)
		if frac > 1 {
			frac = 1
		}
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %3.0f%% %.0f/s ", p.label, strings.Repeat("=", n), strings.Repeat(" ", width-n), done, p.total, frac*100, rate)
	} else {
		fmt.Fprintf(p.w, "\r%s %d %.0f/s ", p.label, done, rate)
	}
}

// Done ends the bar's line.
func (p *progress) Done() {
	if p != nil && p.active && !p.last.IsZero() {
		fmt.Fprintln(p.w)
	}
}

func storeDir(c *cli.Context) string {
	d := c.String("dir")
	if strings.HasPrefix(d, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			d = filepath.Join(h, d[2:])
		}
	}
	return d
}

// openStore opens the store of --dir with the vault key (--vault-key or
// DIR/vault.key).
func openStore(c *cli.Context) (*store.Store, error) {
	return store.Open(storeDir(c), store.OpenOptions{VaultKeyPath: c.String("vault-key")})
}

// openStoreNoKeys opens the store for raw reads and verification; it uses
// the vault key when one is available.
func openStoreMaybeKeys(c *cli.Context) (*store.Store, error) {
	dir := storeDir(c)
	s, err := store.Open(dir, store.OpenOptions{VaultKeyPath: c.String("vault-key")})
	if err == nil {
		return s, nil
	}
	if _, statErr := os.Stat(filepath.Join(dir, store.VaultFile)); c.String("vault-key") == "" && os.IsNotExist(statErr) {
		return store.Open(dir, store.OpenOptions{NoKeys: true})
	}
	return nil, err
}

// loadKeysFor reads the vault key of a store directory without opening its
// log (for commands that must work on a damaged log).
func loadKeysFor(c *cli.Context, m store.Meta) (*crypto.Keyring, error) {
	dir := storeDir(c)
	p := c.String("vault-key")
	if p == "" {
		p = filepath.Join(dir, store.VaultFile)
		if _, err := os.Stat(p); os.IsNotExist(err) {
			return nil, nil
		}
	}
	return store.LoadKeys(dir, m, store.OpenOptions{VaultKeyPath: p})
}

// stdinIsTerminal reports whether standard input is an interactive
// terminal (reading it would wait for the user, not a pipe).
func stdinIsTerminal(c *cli.Context) bool {
	f, ok := c.App.Reader.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
