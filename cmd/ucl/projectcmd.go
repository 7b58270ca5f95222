package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
)

var embedderFlags = []cli.Flag{
	&cli.StringFlag{Name: "embedder", EnvVars: []string{"UCL_EMBEDDER"}, Value: ucl.EmbedderHash, Usage: "hash (built-in, offline), static (a model2vec model directory given as --embed-model, offline), ollama or openai"},
	&cli.StringFlag{Name: "embed-url", EnvVars: []string{"UCL_EMBED_URL"}, Usage: "embedding server base URL (ollama: http://localhost:11434)"},
	&cli.StringFlag{Name: "embed-model", EnvVars: []string{"UCL_EMBED_MODEL"}, Usage: "embedding model name (static: the model2vec model directory)"},
	&cli.DurationFlag{Name: "embed-timeout", EnvVars: []string{"UCL_EMBED_TIMEOUT"}, Value: ucl.DefaultEmbedTimeout, Usage: "timeout of one embedding request"},
	&cli.IntFlag{Name: "embed-dim", EnvVars: []string{"UCL_EMBED_DIM"}, Usage: "the model's vector dimension (default: asked once and remembered in DIR/embedder.json)"},
}

var projectCommand = &cli.Command{
	Name:  "project",
	Usage: "catch up, rebuild, inspect or verify the projections",
	Description: `Projections (timelines, fts, summary, vectors) are derived from the log
and can always be thrown away and rebuilt. Without a subcommand, catches every
projection up to the log head.

A status shows a projection's digest only when one was computed for its
current state (by ` + "`ucl project verify`" + ` or --digests), since a digest is a
pass over the whole projection; "-" means not computed.`,
	Flags: []cli.Flag{digestsFlag},
	Action: func(c *cli.Context) error {
		return withAPI(c, func(api ucl.API) error {
			boundBuildHeap()
			prog, done := stagedProgress(c)
			res, err := api.CatchUp(context.Background(), ucl.CatchUpRequest{Digests: c.Bool("digests"), Progress: prog})
			done()
			if err != nil {
				return err
			}
			return printProjStatus(c, res)
		})
	},
	Subcommands: []*cli.Command{
		{
			Name:  "rebuild",
			Usage: "throw projections away and rebuild them from the log",
			Flags: []cli.Flag{&cli.StringSliceFlag{Name: "only", Usage: "rebuild only this projection (repeatable): " + strings.Join(projstd.Names, ", ")}, digestsFlag},
			Action: func(c *cli.Context) error {
				return withAPIBuild(c, true, func(api ucl.API) error {
					boundBuildHeap()
					prog, done := stagedProgress(c)
					res, err := api.RebuildProjections(context.Background(), ucl.RebuildProjectionsRequest{Only: c.StringSlice("only"), Digests: c.Bool("digests"), Progress: prog})
					done()
					if err != nil {
						return withHint(err, "projection names: "+strings.Join(projstd.Names, ", "))
					}
					return printProjStatus(c, res)
				})
			},
		},
		{
			Name:  "status",
			Usage: "per projection: checkpoint seq, digest (when computed), size, lag",
			Flags: []cli.Flag{digestsFlag},
			Action: func(c *cli.Context) error {
				return withAPI(c, func(api ucl.API) error {
					res, err := api.ProjectionStatus(context.Background(), ucl.ProjectionStatusRequest{Digests: c.Bool("digests")})
					if err != nil {
						return err
					}
					return printProjStatus(c, res)
				})
			},
		},
		{
			Name:  "verify",
			Usage: "rebuild every projection in a temp dir and compare digests with the live ones",
			Action: func(c *cli.Context) error {
				return withAPI(c, func(api ucl.API) error {
					prog, done := stagedProgress(c)
					res, err := api.VerifyProjections(context.Background(), ucl.VerifyProjectionsRequest{Progress: prog})
					done()
					if res == nil {
						return err
					}
					if jsonOut(c) {
						printJSON(c, res)
					} else {
						for _, n := range projstd.Names {
							if d, ok := res.Digests[n]; ok {
								printf(c, "%-10s %s\n", n, d)
							}
						}
					}
					if errors.Is(err, ucl.ErrProjectionsDiffer) {
						return withHint(err, "run `ucl project rebuild --only NAME` to replace the damaged projection")
					}
					if err != nil {
						return err
					}
					if !jsonOut(c) {
						printf(c, "ok: a fresh rebuild gives the same digests\n")
					}
					return nil
				})
			},
		},
	},
}

// digestsFlag makes a status compute the digests it has not cached.
var digestsFlag = &cli.BoolFlag{Name: "digests", Usage: "compute the digests not yet computed for the current state (a pass over each such projection)"}

func printProjStatus(c *cli.Context, res *ucl.ProjectionsResult) error {
	if jsonOut(c) {
		return printJSON(c, res)
	}
	printf(c, "%-10s %8s %8s %-16s %10s\n", "name", "seq", "behind", "digest", "size")
	missing := false
	for _, p := range res.Projections {
		d := p.Digest
		if d == "" {
			d, missing = "-", true
		}
		printf(c, "%-10s %8d %8d %-16.16s %10s\n", p.Name, p.Checkpoint.Seq, p.Behind, d, humanBytes(p.Size))
	}
	if missing {
		printf(c, "digest -: not computed for this state; `ucl project verify` or --digests computes it\n")
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
			Flags: []cli.Flag{&cli.IntFlag{Name: "limit", Value: ucl.DefaultSessionsLimit, Usage: "at most this many (0: all)"}},
			Action: func(c *cli.Context) error {
				return withQueryAPI(c, func(api ucl.API) error {
					prog, done := stagedProgress(c)
					res, err := api.Sessions(context.Background(), ucl.SessionsRequest{Limit: c.Int("limit"), Progress: prog})
					done()
					if err != nil {
						return err
					}
					if jsonOut(c) {
						return printJSON(c, res)
					}
					if len(res.Sessions) == 0 {
						printf(c, "no sessions yet (store something with `ucl store --session ID TEXT`)\n")
					}
					for _, x := range res.Sessions {
						printf(c, "%-24s %s .. %s  %4d chunks  %s\n", x.ID, log.FormatTime(x.First)[:16], log.FormatTime(x.Last)[:16], x.Chunks, x.Title)
					}
					return nil
				})
			},
		},
		{
			Name:      "show",
			Usage:     "a session's turns, tool calls and documents in order, with its summary",
			ArgsUsage: "ID",
			Flags: []cli.Flag{
				&cli.IntFlag{Name: "last", Usage: "only the session's last `N` chunks (its most recent turns)"},
				&cli.StringFlag{Name: "as-of", Usage: "the session as it stood at log `SEQ|TIME` (later turns left out, later tombstones and edits not applied)"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return usage("ucl session show ID (see `ucl session list`)", "want one session id")
				}
				if c.Int("last") < 0 {
					return usage("ucl session show --last N ID", "--last wants a positive count")
				}
				return withAPI(c, func(api ucl.API) error {
					prog, done := stagedProgress(c)
					res, err := api.Session(context.Background(), ucl.SessionRequest{ID: c.Args().First(), Last: c.Int("last"), AsOf: c.String("as-of"), Progress: prog})
					done()
					if err != nil {
						return withHint(err, "see `ucl session list` for the session ids")
					}
					if jsonOut(c) {
						return printJSON(c, res)
					}
					printf(c, "session %s: %s\n", res.Session.ID, res.Session.Title)
					if len(res.Chunks) < res.Total {
						printf(c, "(the last %d of %d chunks)\n", len(res.Chunks), res.Total)
					}
					if res.Summary.Text != "" {
						printf(c, "summary: %s\n", res.Summary.Text)
					}
					for _, ch := range res.Chunks {
						content := ch.Content
						if ch.Tool != nil {
							content = fmt.Sprintf("%s %s [%s] → %s", ch.Tool.Name, ch.Tool.Args, ch.Tool.Status, ch.Content)
						}
						printf(c, "[%s] %s/%s: %s\n", log.FormatTime(ch.Time)[:19], ch.Kind, ch.Role, content)
					}
					return nil
				})
			},
		},
	},
}
