package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/consolidate"
	"github.com/unlimitedcontext/ucl/internal/config"
)

// consolidateOptions are the model settings of cfg ([consolidate], the
// proxy's upstream as the default endpoint, the key from the environment).
func consolidateOptions(cfg *config.Config) ucl.ConsolidateOptions {
	if cfg == nil {
		return ucl.ConsolidateOptions{}
	}
	ep := cfg.String("consolidate.endpoint")
	if ep == "" {
		ep = cfg.String("proxy.upstream")
	}
	return ucl.ConsolidateOptions{Endpoint: ep, Model: cfg.String("consolidate.model"), APIKey: cfg.ConsolidateKey,
		Timeout: cfg.Duration("consolidate.timeout")}
}

// runConsolidateSchedule consolidates every [consolidate] every in the
// owner, reporting each run in one line on w (never the key).
func runConsolidateSchedule(ctx context.Context, s *ucl.Store, cfg *config.Config, w io.Writer) {
	v := cfg.String("consolidate.every")
	if v == "" {
		return
	}
	every := cfg.Duration("consolidate.every")
	fmt.Fprintf(w, "ucl: consolidating every %s\n", every)
	go ucl.ConsolidateEvery(ctx, s, every, func(res *ucl.ConsolidateResult, err error) {
		if err != nil {
			fmt.Fprintf(w, "ucl: consolidate: %v\n", err)
			return
		}
		if len(res.Calls) > 0 {
			fmt.Fprintf(w, "ucl: consolidate: %s\n", consolidateSummary(res))
		}
	})
}

func consolidateSummary(res *ucl.ConsolidateResult) string {
	turns := 0
	for _, c := range res.Calls {
		turns += c.Turns
	}
	s := fmt.Sprintf("%d turn(s) in %d request(s): stored %d fact(s) and %d profile(s), refused %d, %d duplicate(s)",
		turns, len(res.Calls), len(res.Stored), len(res.Profiles), len(res.Refused), len(res.Duplicates))
	if res.Pending {
		s += "; more turns are pending (run it again)"
	}
	return s
}

var consolidateCommand = &cli.Command{
	Name:  "consolidate",
	Usage: "extract facts and profiles from the turns not yet consolidated, with a model",
	Description: `Sends the user and assistant turns not yet consolidated to an OpenAI-compatible
chat model ([consolidate] model and endpoint in DIR/ucl.toml, or UCL_CONSOLIDATE_MODEL /
UCL_CONSOLIDATE_ENDPOINT; the endpoint defaults to [proxy] upstream; the key comes from
UCL_CONSOLIDATE_API_KEY, else the upstream key). Each fact it returns is stored as an
item of kind knowledge in session ` + consolidate.Session + ` only if the turns it cites
support it (its names, numbers and most of its words occur in them); the rest is listed
as refused. Each subject gets a profile (kind profile) listing its current facts with
their source ids. A malformed, partial or failed answer stores nothing. Forgetting a
source (ucl tombstone) removes what was derived from it in the same batch.`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "session", Usage: "only this session's turns"},
		&cli.StringFlag{Name: "since", Usage: "only turns from this content time on"},
		&cli.StringFlag{Name: "model", Usage: "model name for this run (default [consolidate] model)"},
		&cli.StringFlag{Name: "endpoint", Usage: "OpenAI-compatible base URL with /v1 for this run"},
		&cli.IntFlag{Name: "turns", Usage: "turns per request (default 40)"},
		&cli.IntFlag{Name: "requests", Usage: "requests per run (default 25)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("ucl consolidate takes flags only", "unexpected argument %q", c.Args().First())
		}
		req := ucl.ConsolidateRequest{Session: c.String("session"), Since: c.String("since"), Model: c.String("model"),
			Endpoint: c.String("endpoint"), Turns: c.Int("turns"), Requests: c.Int("requests")}
		if req.Since != "" {
			if _, err := ucl.ParseTime(req.Since); err != nil {
				return usage("--since 2023-05-01", "%v", err)
			}
		}
		return withAPI(c, func(api ucl.API) error {
			cs, ok := api.(ucl.Consolidator)
			if !ok {
				return fmt.Errorf("consolidate: this store handle cannot consolidate")
			}
			res, err := cs.Consolidate(context.Background(), req)
			if errors.Is(err, consolidate.ErrNoModel) {
				return withHint(fmt.Errorf("consolidate: no model is configured, nothing was sent or stored: %w", err),
					"set [consolidate] model (and endpoint, or [proxy] upstream) in DIR/ucl.toml, or UCL_CONSOLIDATE_MODEL and UCL_CONSOLIDATE_ENDPOINT; an owner (ucl serve) uses the settings it started with")
			}
			if res != nil && jsonOut(c) {
				if perr := printJSON(c, res); perr != nil {
					return perr
				}
			} else if res != nil {
				printConsolidate(c, res)
			}
			switch {
			case errors.Is(err, consolidate.ErrMalformed), errors.Is(err, consolidate.ErrPartial):
				return withHint(err, "the model's answer was not stored; run it again or try another model")
			case errors.Is(err, consolidate.ErrUpstream):
				return withHint(err, "nothing of this request was stored; check the endpoint, the model name and the API key variable")
			}
			return err
		})
	},
}

func printConsolidate(c *cli.Context, res *ucl.ConsolidateResult) {
	if len(res.Calls) == 0 {
		printf(c, "nothing to consolidate: every turn was consolidated already\n")
		return
	}
	printf(c, "%s (model %s)\n", consolidateSummary(res), res.Model)
	for _, f := range res.Stored {
		printf(c, "  stored   %s  [%s] %s  (from %s)\n", f.ID, f.Subject, f.Text, strings.Join(f.Sources, ", "))
	}
	for _, f := range res.Refused {
		printf(c, "  refused  [%s] %s: %s\n", f.Subject, f.Text, f.Reason)
	}
	for _, f := range res.Duplicates {
		printf(c, "  dup      [%s] %s (already %s)\n", f.Subject, f.Text, f.DuplicateOf)
	}
	for _, p := range res.Profiles {
		printf(c, "  profile  %s  %s (%d fact(s))\n", p.ID, p.Subject, len(p.Facts))
	}
}

var profileCommand = &cli.Command{
	Name:      "profile",
	Usage:     "show the current profile of each subject (or of SUBJECT), with its facts' sources",
	ArgsUsage: "[SUBJECT]",
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage("ucl profile [SUBJECT]", "too many arguments")
		}
		return withAPI(c, func(api ucl.API) error {
			cs, ok := api.(ucl.Consolidator)
			if !ok {
				return fmt.Errorf("profile: this store handle cannot read profiles")
			}
			res, err := cs.Profile(context.Background(), ucl.ProfileRequest{Subject: c.Args().First()})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			if len(res.Profiles) == 0 {
				printf(c, "no profile yet (ucl consolidate writes them)\n")
				return nil
			}
			for _, p := range res.Profiles {
				printf(c, "%s\n\n", p.Content)
			}
			return nil
		})
	},
}
