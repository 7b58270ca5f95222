package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/unlimitedcontext/ucl"
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

// stagedProgress returns a ucl.Progress that draws one bar per stage (on a
// terminal only; nil otherwise) and a func that ends the current bar.
func stagedProgress(c *cli.Context) (ucl.Progress, func()) {
	if !interactive(c) {
		return nil, func() {}
	}
	var mu sync.Mutex
	var cur *progress
	var name string
	return func(stage string, done, total uint64) {
			mu.Lock()
			defer mu.Unlock()
			if stage != name {
				cur.Done()
				cur, name = newProgress(c, stage, total), stage
			}
			cur.Set(done, total)
		}, func() {
			mu.Lock()
			defer mu.Unlock()
			cur.Done()
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

// engineOptions builds the engine options from the global flags.
func engineOptions(c *cli.Context) ucl.Options {
	return ucl.Options{
		VaultKeyPath: c.String("vault-key"),
		Keys:         vaultKeys(c),
		Passphrase:   passphrase(c),
		Embedder: ucl.EmbedderOptions{Kind: setting(c, "embedder", "index.embedder"), URL: setting(c, "embed-url", "index.embed_url"),
			Model:   setting(c, "embed-model", "index.embed_model"),
			Timeout: c.Duration("embed-timeout"), Dim: c.Int("embed-dim")},
		Consolidate: consolidateOptions(fileConfig),
	}
}

// withAPI runs fn on the store of --dir through ucl.Shared: attached to
// its owner when one serves it, else opened by this process for the length
// of the command. An owner that exits between finding its socket and
// answering refuses the connection before the request is sent: then the
// call attaches again (taking the store over) and runs once more.
func withAPI(c *cli.Context, fn func(ucl.API) error) error {
	return withAPIOpts(c, engineOptions(c), false, fn)
}

// withQueryAPI is withAPI for a one-shot query, context or session
// listing: the store, when
// this process opens it, reads its projections at random
// (ucl.Options.RandomReads).
func withQueryAPI(c *cli.Context, fn func(ucl.API) error) error {
	o := engineOptions(c)
	o.RandomReads = true
	return withAPIOpts(c, o, false, fn)
}

// withAPIBuild is withAPI for a command that may write the projections
// wholesale (withAPIOpts).
func withAPIBuild(c *cli.Context, built bool, fn func(ucl.API) error) error {
	return withAPIOpts(c, engineOptions(c), built, fn)
}

// withAPIOpts is withAPI with the engine options o. When this process
// opened the store itself and either built (the command rebuilt the
// projections) is set or a bulk catch-up ran, it drops the projections'
// pages from the page cache once the store is closed
// (ucl.DropProjectionPages says why).
func withAPIOpts(c *cli.Context, o ucl.Options, built bool, fn func(ucl.API) error) error {
	api, err := ucl.OpenShared(storeDir(c), o, ucl.SharedOptions{})
	if err != nil {
		return openError(err)
	}
	err = fn(api)
	dumpMemStats(c.App.ErrWriter)
	owned := api.Owner() != nil
	if cerr := api.Close(); err == nil {
		err = cerr
	}
	if owned && (built || ucl.BulkCatchUpRan()) {
		if derr := ucl.DropProjectionPages(storeDir(c)); derr != nil {
			// Advice only: the command did what it was asked.
			fmt.Fprintf(c.App.ErrWriter, "ucl: warning: %v\n", derr)
		}
	}
	return err
}

// openError adds the CLI's words to an engine option error.
func openError(err error) error {
	switch {
	case errors.Is(err, ucl.ErrUnknownEmbedder):
		return usage("--embedder takes hash, static, ollama or openai", "%v", err)
	case errors.Is(err, ucl.ErrEmbedderConfig):
		return usage("set --embed-url and --embed-model (or UCL_EMBED_URL / UCL_EMBED_MODEL); the static embedder takes only --embed-model DIR", "%v", err)
	}
	return err
}

// stdinIsTerminal reports whether standard input is an interactive
// terminal (reading it would wait for the user, not a pipe).
func stdinIsTerminal(c *cli.Context) bool {
	f, ok := c.App.Reader.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
