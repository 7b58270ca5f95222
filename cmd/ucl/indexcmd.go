package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/index"
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
		&cli.StringSliceFlag{Name: "meta", Usage: "only items whose meta has `KEY=VALUE` (repeatable: all of them)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage(`quote the query: ucl index "text with spaces"`, "too many arguments")
		}
		if b := c.Int("budget"); b < index.MinBudget {
			return usage(fmt.Sprintf("--budget takes at least %d tokens, e.g. --budget 2000", index.MinBudget), "bad --budget %d", b)
		}
		req := ucl.IndexRequest{Query: c.Args().First(), Budget: c.Int("budget"), Sessions: c.StringSlice("session"),
			Kinds: c.StringSlice("kind"), Since: c.String("since"), Until: c.String("until"), Now: c.String("now"),
			NoTemporal: c.Bool("no-time")}
		var err error
		if req.Meta, err = metaFlags(c); err != nil {
			return err
		}
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
			// The engine gives each group's call as data; the text shows
			// it as the command that opens it (the JSON keeps the data).
			index.Rewrite(res, cliCommand)
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

// cliCommand renders an index link (an engine method and its request's
// fields) as the ucl command that runs it.
func cliCommand(l index.Link) string {
	cmd := []string{"ucl"}
	str := func(k string) string { v, _ := l.Args[k].(string); return v }
	switch l.Method {
	case "session":
		return "ucl session show " + shellQuote(str("id"))
	case "index":
		cmd = append(cmd, "index")
		if q := str("query"); q != "" {
			cmd = append(cmd, shellQuote(q))
		}
		for _, f := range []struct{ arg, flag string }{{"sessions", "--session"}, {"kinds", "--kind"}} {
			for _, v := range strList(l.Args[f.arg]) {
				cmd = append(cmd, f.flag, shellQuote(v))
			}
		}
		for _, f := range []string{"since", "until", "now"} {
			if v := str(f); v != "" {
				cmd = append(cmd, "--"+f, shellQuote(v))
			}
		}
		for _, kv := range metaArg(l.Args["meta"]) {
			cmd = append(cmd, "--meta", shellQuote(kv))
		}
		return strings.Join(cmd, " ")
	}
	// A method the index does not link to today: as the engine gives it
	// (TestIndexLinksAsCommands holds the two it does).
	return l.String()
}

// strList is a link argument's list of strings: []string in the owner's
// process, []any once it crossed the socket as JSON.
func strList(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// metaArg is a link's meta argument as KEY=VALUE strings in key order:
// map[string]string in the owner's process, map[string]any once it crossed
// the socket as JSON.
func metaArg(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]string:
		for k, x := range v {
			out = append(out, k+"="+x)
		}
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, k+"="+s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// shellQuote quotes s for a POSIX shell unless it needs none.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == ':' || r == '/' || r == '#' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
