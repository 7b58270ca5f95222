package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/vector"
)

var embedderFlags = []cli.Flag{
	&cli.StringFlag{Name: "embedder", EnvVars: []string{"UCL_EMBEDDER"}, Value: "hash", Usage: "hash (built-in, offline), static (a model2vec model directory, offline), ollama or openai"},
	&cli.StringFlag{Name: "embed-url", EnvVars: []string{"UCL_EMBED_URL"}, Usage: "embedding server base URL (ollama: http://localhost:11434)"},
	&cli.StringFlag{Name: "embed-model", EnvVars: []string{"UCL_EMBED_MODEL"}, Usage: "embedding model name (static: the model directory)"},
	&cli.DurationFlag{Name: "embed-timeout", EnvVars: []string{"UCL_EMBED_TIMEOUT"}, Value: time.Minute, Usage: "timeout of one embedding request"},
	&cli.IntFlag{Name: "embed-dim", EnvVars: []string{"UCL_EMBED_DIM"}, Usage: "the model's vector dimension (default: asked once and remembered in DIR/embedder.json)"},
}

// embedderDim returns the dimension of an HTTP embedding model: remembered
// in DIR/embedder.json per protocol and model, else asked of the server
// once (a one-text probe) and remembered.
func embedderDim(s *store.Store, ho vector.HTTPOptions) (int, error) {
	key := fmt.Sprintf("%s/%s", ho.Protocol, ho.Model)
	path := s.Path("embedder.json")
	known := map[string]int{}
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &known)
	}
	if d := known[key]; d > 0 {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := vector.DetectDim(ctx, ho)
	if err != nil {
		return 0, err
	}
	known[key] = d
	b, _ := json.MarshalIndent(known, "", "  ")
	return d, fsutil.WriteFileAtomic(path, b, 0o600)
}

func init() { globalFlags = append(globalFlags, embedderFlags...) }

// projOptions builds the projection options from the global flags.
func projOptions(c *cli.Context, s *store.Store) (projstd.Options, error) {
	var o projstd.Options
	switch e := c.String("embedder"); e {
	case "", "hash":
	case "static":
		if c.String("embed-model") == "" {
			return o, usage("--embedder static --embed-model DIR (a model2vec directory: tokenizer.json, model.safetensors)", "the static embedder needs a model directory")
		}
		se, err := vector.LoadStatic(c.String("embed-model"))
		if err != nil {
			return o, withHint(err, "point --embed-model at a model2vec directory, e.g. a download of minishlab/potion-base-8M")
		}
		o.Vectors.Embedder = se
	case "ollama", "openai":
		proto := vector.ProtocolOllama
		if e == "openai" {
			proto = vector.ProtocolOpenAI
		}
		if c.String("embed-url") == "" || c.String("embed-model") == "" {
			return o, usage("set --embed-url and --embed-model (or UCL_EMBED_URL / UCL_EMBED_MODEL)", "the %s embedder needs a URL and a model", e)
		}
		ho := vector.HTTPOptions{Protocol: proto, BaseURL: c.String("embed-url"), Model: c.String("embed-model"), Dim: c.Int("embed-dim"),
			Timeout: c.Duration("embed-timeout")}
		if ho.Dim == 0 {
			d, err := embedderDim(s, ho)
			if err != nil {
				return o, withHint(fmt.Errorf("probe embedding model: %w", err), "check --embed-url and --embed-model, or pass --embed-dim")
			}
			ho.Dim = d
		}
		h, err := vector.NewHTTPEmbedder(ho)
		if err != nil {
			return o, err
		}
		cache, err := vector.OpenBoltCache(s.Path("embed-cache.db"))
		if err != nil {
			return o, err
		}
		o.Vectors.Embedder = vector.NewCachedEmbedder(h, cache)
	default:
		return o, usage("--embedder takes hash, static, ollama or openai", "unknown embedder %q", e)
	}
	return o, nil
}

// openProjected opens the store and its projections and catches them up to
// the log head (with a progress bar on a terminal), so reads see every
// appended event.
func openProjected(c *cli.Context) (*store.Store, *projstd.Set, error) {
	s, err := openStore(c)
	if err != nil {
		return nil, nil, err
	}
	set, err := openSet(c, s)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	p := newProgress(c, "project", 0)
	err = set.CatchUp(context.Background(), p.Set)
	p.Done()
	if err != nil {
		set.Close()
		s.Close()
		return nil, nil, withHint(fmt.Errorf("catch up projections: %w", err), "the log is untouched; fix the cause (e.g. the embedding server) and run the command again, it resumes")
	}
	return s, set, nil
}

// withSet opens the store and its projections (without catching up), runs
// fn and closes both.
func withSet(c *cli.Context, fn func(*store.Store, *projstd.Set) error) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	defer s.Close()
	set, err := openSet(c, s)
	if err != nil {
		return err
	}
	defer set.Close()
	return fn(s, set)
}

func openSet(c *cli.Context, s *store.Store) (*projstd.Set, error) {
	o, err := projOptions(c, s)
	if err != nil {
		return nil, err
	}
	o.Projector.TempDir = s.Dir
	return projstd.Open(s.Path(store.ProjectionsDir), s.Log, o)
}

var projectCommand = &cli.Command{
	Name:  "project",
	Usage: "catch up, rebuild, inspect or verify the projections",
	Description: `Projections (timelines, fts, summary, vectors) are derived from the log
and can always be thrown away and rebuilt. Without a subcommand, catches every
projection up to the log head.`,
	Action: func(c *cli.Context) error {
		s, set, err := openProjected(c)
		if err != nil {
			return err
		}
		defer s.Close()
		defer set.Close()
		return printProjStatus(c, set)
	},
	Subcommands: []*cli.Command{
		{
			Name:  "rebuild",
			Usage: "throw projections away and rebuild them from the log",
			Flags: []cli.Flag{&cli.StringSliceFlag{Name: "only", Usage: "rebuild only this projection (repeatable): " + strings.Join(projstd.Names, ", ")}},
			Action: func(c *cli.Context) error {
				return withSet(c, func(_ *store.Store, set *projstd.Set) error {
					p := newProgress(c, "rebuild", 0)
					err := set.Projector.Rebuild(context.Background(), c.StringSlice("only"), p.Set)
					p.Done()
					if err != nil {
						return withHint(err, "projection names: "+strings.Join(projstd.Names, ", "))
					}
					return printProjStatus(c, set)
				})
			},
		},
		{
			Name:  "status",
			Usage: "per projection: checkpoint seq, digest, size, lag",
			Action: func(c *cli.Context) error {
				return withSet(c, func(_ *store.Store, set *projstd.Set) error { return printProjStatus(c, set) })
			},
		},
		{
			Name:  "verify",
			Usage: "rebuild every projection in a temp dir and compare digests with the live ones",
			Action: func(c *cli.Context) error {
				s, set, err := openProjected(c)
				if err != nil {
					return err
				}
				defer s.Close()
				defer set.Close()
				o, _ := projOptions(c, s)
				p := newProgress(c, "verify", 0)
				mm, err := set.Projector.Verify(context.Background(), projstd.Builder(o), p.Set)
				p.Done()
				if err != nil {
					return err
				}
				ds, _ := set.Projector.Digests()
				if jsonOut(c) {
					printJSON(c, map[string]any{"ok": len(mm) == 0, "digests": ds, "mismatches": mm})
				} else {
					for _, n := range projstd.Names {
						if d, ok := ds[n]; ok {
							printf(c, "%-10s %s\n", n, d)
						}
					}
				}
				if len(mm) > 0 {
					var names []string
					for _, m := range mm {
						names = append(names, fmt.Sprintf("%s (live %.12s, rebuilt %.12s)", m.Name, m.Live, m.Rebuilt))
					}
					return withHint(fmt.Errorf("project verify: digests differ: %s", strings.Join(names, "; ")),
						"run `ucl project rebuild --only NAME` to replace the damaged projection")
				}
				if !jsonOut(c) {
					printf(c, "ok: a fresh rebuild gives the same digests\n")
				}
				return nil
			},
		},
	},
}

func printProjStatus(c *cli.Context, set *projstd.Set) error {
	st, err := set.Projector.Status()
	if err != nil {
		return err
	}
	if jsonOut(c) {
		return printJSON(c, map[string]any{"projections": st})
	}
	printf(c, "%-10s %8s %8s %-16s %10s\n", "name", "seq", "behind", "digest", "size")
	for _, p := range st {
		printf(c, "%-10s %8d %8d %-16.16s %10s\n", p.Name, p.Checkpoint.Seq, p.Behind, p.Digest, humanBytes(p.Size))
	}
	return nil
}

var sessionCommand = &cli.Command{
	Name:  "session",
	Usage: "list sessions or show one",
	Subcommands: []*cli.Command{
		{
			Name:  "list",
			Usage: "sessions, most recent first",
			Flags: []cli.Flag{&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many (0: all)"}},
			Action: func(c *cli.Context) error {
				s, set, err := openProjected(c)
				if err != nil {
					return err
				}
				defer s.Close()
				defer set.Close()
				ss, err := set.Timelines.Sessions()
				if err != nil {
					return err
				}
				if l := c.Int("limit"); l > 0 && len(ss) > l {
					ss = ss[:l]
				}
				if jsonOut(c) {
					return printJSON(c, map[string]any{"sessions": ss})
				}
				if len(ss) == 0 {
					printf(c, "no sessions yet (store something with `ucl store --session ID TEXT`)\n")
				}
				for _, x := range ss {
					printf(c, "%-24s %s .. %s  %4d chunks  %s\n", x.ID, log.FormatTime(x.First)[:16], log.FormatTime(x.Last)[:16], x.Chunks, x.Title)
				}
				return nil
			},
		},
		{
			Name:      "show",
			Usage:     "a session's turns, tool calls and documents in order, with its summary",
			ArgsUsage: "ID",
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return usage("ucl session show ID (see `ucl session list`)", "want one session id")
				}
				s, set, err := openProjected(c)
				if err != nil {
					return err
				}
				defer s.Close()
				defer set.Close()
				info, chunks, err := set.Timelines.Session(c.Args().First())
				if err != nil {
					return withHint(err, "see `ucl session list` for the session ids")
				}
				sum, _, _ := set.Summary.Session(info.ID)
				if jsonOut(c) {
					return printJSON(c, map[string]any{"session": info, "summary": sum, "chunks": chunks})
				}
				printf(c, "session %s: %s\n", info.ID, info.Title)
				if sum.Text != "" {
					printf(c, "summary: %s\n", sum.Text)
				}
				for _, ch := range chunks {
					printf(c, "[%s] %s/%s: %s\n", log.FormatTime(ch.Time)[:19], ch.Kind, ch.Role, ch.Content)
				}
				return nil
			},
		},
	},
}

func init() { register(projectCommand, sessionCommand) }

var _ projections.Source = (*log.Log)(nil)
