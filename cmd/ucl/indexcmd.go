package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/query"
)

var indexCommand = &cli.Command{
	Name:      "index",
	Usage:     "a map of the store (or of QUERY's matches) under a token budget, to navigate from",
	ArgsUsage: "[QUERY]",
	Description: `Without QUERY, every live item; with it, the items whose text matches any of
its words (time phrases such as "last week" become a time filter). Up to 50
matches are shown in full, up to 500 as dated snippets with ids (ucl get ID
opens one); beyond that, groups: sessions (matches, time span, L0 summary),
months and topic clusters, each with the command that opens it, then the best
matches. A time overview (today, earlier this week, earlier this month, older)
comes first. The whole output stays within --budget tokens (estimate:
max(bytes/4, 4/3 per word)). Deterministic for a given --now.`,
	Flags: []cli.Flag{
		&cli.IntFlag{Name: "budget", Value: ucl.DefaultBudget, Usage: "token budget of the whole output"},
		&cli.StringSliceFlag{Name: "session", Aliases: []string{"s"}, Usage: "only this `SESSION` (repeatable)"},
		&cli.StringSliceFlag{Name: "kind", Usage: "only this `KIND`: conversation, document, knowledge, tool_call, profile (repeatable)"},
		&cli.StringFlag{Name: "since", Usage: "only content from this time on (RFC 3339, date or unix ms)"},
		&cli.StringFlag{Name: "until", Usage: "only content before this time"},
		&cli.StringFlag{Name: "now", Usage: "reference time for the overview and time phrases (default: the current time)"},
		&cli.BoolFlag{Name: "no-time", Usage: "ignore time phrases in QUERY"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage(`quote the query: ucl index "text with spaces"`, "too many arguments")
		}
		if b := c.Int("budget"); b < ucl.MinIndexBudget {
			return usage(fmt.Sprintf("--budget takes at least %d tokens, e.g. --budget 2000", ucl.MinIndexBudget), "bad --budget %d", b)
		}
		req := ucl.IndexRequest{Query: c.Args().First(), Budget: c.Int("budget"), Sessions: c.StringSlice("session"),
			Kinds: c.StringSlice("kind"), Since: c.String("since"), Until: c.String("until"), Now: c.String("now"),
			NoTemporal: c.Bool("no-time"), For: "cli"}
		for _, k := range req.Kinds {
			switch k {
			case "conversation", "document", "knowledge", "tool_call", "profile":
			default:
				return usage("--kind takes conversation, document, knowledge, tool_call or profile", "unknown kind %q", k)
			}
		}
		for _, f := range []string{"since", "until", "now"} {
			if v := c.String(f); v != "" {
				if _, err := ucl.ParseTime(v); err != nil {
					return usage("--"+f+" 2023-05-08 (RFC 3339, a date or unix ms)", "bad --%s: %v", f, err)
				}
			}
		}
		return withAPI(c, func(api ucl.API) error {
			prog, done := stagedProgress(c)
			req.Progress = prog
			res, err := api.Index(context.Background(), req)
			done()
			if errors.Is(err, query.ErrBadBudget) {
				return withHint(err, "give a larger --budget")
			}
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			_, err = c.App.Writer.Write([]byte(res.Text))
			return err
		})
	},
}

var dedupeCommand = &cli.Command{
	Name:  "dedupe",
	Usage: "report groups of near-duplicate items (changes nothing)",
	Description: `--report lists groups of live items whose texts are near-duplicates: the
Jaccard similarity of their word 3-shingles (case, white space and zero-width
characters ignored) reaches --threshold, found with MinHash (64 values, 16
bands of 4) and checked exactly. Nothing is changed: forget what you do not
want with ucl tombstone. (Storing an item whose normalized text equals a live
item of the same session, role and kind already returns that item instead.)`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "report", Usage: "list the near-duplicate groups (the only mode: nothing is ever changed)"},
		&cli.Float64Flag{Name: "threshold", Value: ucl.DefaultDedupeThreshold, Usage: "similarity (0, 1] from which two items are near-duplicates"},
		&cli.StringSliceFlag{Name: "session", Aliases: []string{"s"}, Usage: "only this `SESSION` (repeatable)"},
		&cli.StringSliceFlag{Name: "kind", Usage: "only this `KIND` (repeatable)"},
		&cli.IntFlag{Name: "limit", Usage: "list at most N groups (0: all)"},
	},
	Action: func(c *cli.Context) error {
		if !c.Bool("report") {
			return usage("ucl dedupe --report [--json]", "dedupe only reports: give --report")
		}
		if c.NArg() > 0 {
			return usage("ucl dedupe --report [--threshold 0.8]", "unexpected argument %q", c.Args().First())
		}
		th := c.Float64("threshold")
		if th <= 0 || th > 1 {
			return usage("--threshold takes a similarity in (0, 1], e.g. 0.8", "bad --threshold %v", th)
		}
		if c.Int("limit") < 0 {
			return usage("--limit takes 0 (all) or more", "bad --limit %d", c.Int("limit"))
		}
		req := ucl.DedupeRequest{Threshold: th, Sessions: c.StringSlice("session"), Kinds: c.StringSlice("kind"), Limit: c.Int("limit")}
		return withAPI(c, func(api ucl.API) error {
			prog, done := stagedProgress(c)
			req.Progress = prog
			res, err := api.Dedupe(context.Background(), req)
			done()
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			printf(c, "%d items compared; %d near-duplicate pairs in %d groups (%s)\n", res.Items, res.Pairs, res.Groups, res.Method)
			for i, g := range res.List {
				kind := fmt.Sprintf("similarity >= %.2f", g.MinSimilarity)
				if g.Exact {
					kind = "same normalized text"
				}
				printf(c, "\ngroup %d: %d items, %s\n", i+1, len(g.Members), kind)
				for _, m := range g.Members {
					who := m.Session
					if m.Role != "" {
						who += "/" + m.Role
					}
					printf(c, "  %s %s %s %s: %s\n", m.ID, m.Time[:10], strings.TrimPrefix(who, "/"), m.Kind, m.Snippet)
				}
			}
			if len(res.List) < res.Groups {
				printf(c, "\n(%d more groups; raise --limit)\n", res.Groups-len(res.List))
			}
			return nil
		})
	},
}
