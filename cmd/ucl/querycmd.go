package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/query"
)

// Flags shared by query and context.
func retrievalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "kind", Usage: "only chunks of this `KIND`: conversation, document, knowledge, tool_call, profile (repeatable)"},
		&cli.StringSliceFlag{Name: "role", Usage: "only chunks with this role (repeatable)"},
		&cli.StringFlag{Name: "since", Usage: "only content from this time on (RFC 3339, date or unix ms)"},
		&cli.StringFlag{Name: "until", Usage: "only content before this time (RFC 3339, date or unix ms)"},
		&cli.StringFlag{Name: "now", Usage: "reference time for \"yesterday\", \"last week\"… and recency (default: the current time)"},
		&cli.StringFlag{Name: "origin", Value: "all", Usage: "whose chunks: `own|shared|all` (shared: what other wallets granted, received with ucl share pull, marked with the grantor's address)"},
		&cli.StringFlag{Name: "mode", Value: "hybrid", Usage: "retrieval mode: `hybrid|bm25|vector`"},
		&cli.BoolFlag{Name: "no-time", Usage: "ignore time phrases in TEXT (yesterday, last week, in May 2023)"},
		&cli.BoolFlag{Name: "include-superseded", Usage: "rank items another item supersedes like any other (default: below the current ones; marked either way)"},
		&cli.StringFlag{Name: "tz", EnvVars: []string{"UCL_TIMEZONE"}, Usage: "IANA time `ZONE` of the days of time phrases, e.g. Europe/Lisbon (default: [retrieval] timezone, else the machine's)"},
		&cli.StringSliceFlag{Name: "meta", Usage: "only chunks whose meta has `KEY=VALUE` (repeatable: all of them)"},
		&cli.BoolFlag{Name: "diverse", Usage: "re-rank for diversity (MMR, relevance weight 0.7): near-duplicates give way to other results"},
		&cli.StringFlag{Name: "as-of", Usage: "answer from memory as it stood at log `SEQ|TIME` (later items left out, later tombstones and edits not applied)"},
		&cli.Float64Flag{Name: "mmr", Usage: "re-rank for diversity with this relevance weight `LAMBDA` in (0,1) (lower: more diverse)"},
	}
}

var queryCommand = &cli.Command{
	Name:      "query",
	Usage:     "search memory (BM25 + vectors + neighbouring turns)",
	ArgsUsage: "TEXT",
	Description: `Hybrid retrieval over the projections, brought up to date first. Time
phrases in TEXT ("yesterday", "last week", "in May 2023", "since Monday",
"on 2023-05-08") are read relative to --now, cut from the searched text, and
rank content inside their window first (--no-time: ignore them); --explain
shows what was recognised and each result's score breakdown (bm25 and ann
rank/score, the weight the ann score counted with in this query, relevance,
neighbouring turns, session, recency, affinity, time, final).
With --json: one JSON document with a "results" array; every result carries
its chunk id, session, role, kind, time, seq, content and meta as stored.`,
	Flags: append([]cli.Flag{
		&cli.IntFlag{Name: "k", Value: query.DefaultK, Usage: fmt.Sprintf("number of results `N` (at most %d)", query.MaxK)},
		&cli.StringSliceFlag{Name: "session", Aliases: []string{"s"}, Usage: "filter: only chunks of this `SESSION` (repeatable)"},
		&cli.StringFlag{Name: "active", Usage: "active `SESSION`: its chunks rank a little higher (not a filter)"},
		&cli.BoolFlag{Name: "explain", Usage: "show the score breakdown and the recognised time phrases"},
	}, retrievalFlags()...),
	Action: func(c *cli.Context) error {
		text, err := queryText(c, `ucl query "what did I decide about the cutover" --k 5`)
		if err != nil {
			return err
		}
		req, err := requestFromFlags(c, text)
		if err != nil {
			return err
		}
		req.K = c.Int("k")
		if req.K <= 0 {
			return usage("--k takes a positive number", "bad --k %d", req.K)
		}
		req.Sessions = c.StringSlice("session")
		req.Session = c.String("active")
		req.Explain = c.Bool("explain")
		tuneQueryGC()
		return withQueryAPI(c, func(api ucl.API) error {
			prog, done := stagedProgress(c)
			req.Progress = prog
			resp, err := api.Search(context.Background(), req)
			done()
			if err != nil {
				return queryError(err)
			}
			if jsonOut(c) {
				return printJSON(c, resp)
			}
			printResponse(c, resp, req.Explain)
			return nil
		})
	},
}

var contextCommand = &cli.Command{
	Name:      "context",
	Usage:     "assemble an LLM context for TEXT under a token budget",
	ArgsUsage: "[TEXT]",
	Description: `The last --recent turns of the --active session, then the chunks that best
match TEXT, packed so that the whole output (tags included) counts at most
--budget tokens (estimate: max(bytes/4, 4/3 per word), rounded up). Lower-ranked
chunks are cut to their key sentences before being dropped. Formats:
  xml   <unlimited_context><session id date><turn role time>…</turn></session><document name>…</document></unlimited_context>
  json  {"notes":[…],"documents":[…],"sessions":[…]}
  text  plain sections
TEXT may be omitted when --active and --recent are given (recent turns only).
--active names the conversation in progress; it does not filter (query
--session filters).
With --json: a JSON document describing the assembly, the context in "context".`,
	Flags: append([]cli.Flag{
		&cli.IntFlag{Name: "budget", Value: ucl.DefaultBudget, Usage: "token budget of the whole output"},
		&cli.StringFlag{Name: "active", Usage: "active `SESSION`: its --recent turns open the context (not a filter)"},
		// --session was the active session's flag before --active; kept so
		// scripts keep working, hidden because query --session filters.
		&cli.StringFlag{Name: "session", Aliases: []string{"s"}, Hidden: true},
		&cli.IntFlag{Name: "recent", Value: 6, Usage: "recent turns of the active session to include"},
		&cli.StringFlag{Name: "format", Value: "xml", Usage: "output format: `xml|json|text`"},
		&cli.IntFlag{Name: "k", Usage: "ranked chunks `N` to consider (default: enough to fill --budget)"},
	}, retrievalFlags()...),
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage(`quote the text: ucl context "text with spaces"`, "too many arguments")
		}
		active := c.String("active")
		if active == "" {
			active = c.String("session")
		} else if c.IsSet("session") {
			return usage("--session is the old name of --active: give one of them", "both --active and --session given")
		}
		text := c.Args().First()
		if strings.TrimSpace(text) == "" && (active == "" || c.Int("recent") <= 0) {
			return usage(`ucl context "what we discussed about the cutover" --budget 2000, or --active S --recent N for recent turns only`, "nothing to look for: TEXT is empty")
		}
		req, err := requestFromFlags(c, text)
		if err != nil {
			return err
		}
		req.Session = active
		req.K = c.Int("k")
		if req.K < 0 {
			return usage("--k takes a positive number", "bad --k %d", req.K)
		}
		if _, err := query.ParseFormat(c.String("format")); err != nil {
			return usage("--format takes xml, json or text", "%v", err)
		}
		if c.Int("budget") <= 0 {
			return usage("--budget takes a positive number of tokens, e.g. --budget 4000", "bad --budget %d", c.Int("budget"))
		}
		if c.Int("recent") < 0 {
			return usage("--recent takes 0 or more turns", "bad --recent %d", c.Int("recent"))
		}
		creq := ucl.ContextRequest{SearchRequest: req, Budget: c.Int("budget"), Recent: c.Int("recent"), Format: c.String("format")}
		tuneQueryGC()
		return withQueryAPI(c, func(api ucl.API) error {
			prog, done := stagedProgress(c)
			creq.Progress = prog
			a, err := api.Context(context.Background(), creq)
			done()
			if err != nil {
				return queryError(err)
			}
			if jsonOut(c) {
				return printJSON(c, a)
			}
			_, err = c.App.Writer.Write([]byte(a.Context))
			return err
		})
	},
}

func queryText(c *cli.Context, example string) (string, error) {
	if c.NArg() > 1 {
		return "", usage("quote the text: "+example, "too many arguments")
	}
	text := c.Args().First()
	if strings.TrimSpace(text) == "" {
		return "", usage(example, "nothing to search for: TEXT is empty")
	}
	return text, nil
}

// requestFromFlags reads the flags retrievalFlags defines.
func requestFromFlags(c *cli.Context, text string) (ucl.SearchRequest, error) {
	req := ucl.SearchRequest{Text: text, Kinds: c.StringSlice("kind"), Roles: c.StringSlice("role"), NoTemporal: c.Bool("no-time"),
		IncludeSuperseded: c.Bool("include-superseded"), Since: c.String("since"), Until: c.String("until"), Now: c.String("now"), Origin: strings.ToLower(c.String("origin")), Mode: c.String("mode")}
	for _, k := range req.Kinds {
		switch k {
		case "conversation", "document", "knowledge", "tool_call", "profile":
		default:
			return req, usage("--kind takes conversation, document, knowledge, tool_call or profile", "unknown kind %q", k)
		}
	}
	var since, until int64
	var err error
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"since", &since}, {"until", &until}} {
		if v := c.String(f.name); v != "" {
			if *f.dst, err = ucl.ParseTime(v); err != nil {
				return req, usage("--"+f.name+" 2023-05-08T13:56:00Z, --"+f.name+" 2023-05-08 or unix milliseconds", "bad --%s: %v", f.name, err)
			}
		}
	}
	if since != 0 && until != 0 && until <= since {
		return req, usage("--until must be after --since", "empty time range")
	}
	if v := c.String("now"); v != "" {
		if _, err := ucl.ParseTime(v); err != nil {
			return req, usage("--now 2023-06-14T09:00:00Z", "bad --now: %v", err)
		}
	}
	req.AsOf = c.String("as-of")
	req.TZ = setting(c, "tz", "retrieval.timezone")
	if req.TZ == "" {
		req.TZ = "Local"
	}
	if _, err := time.LoadLocation(req.TZ); err != nil {
		return req, usage("--tz Europe/Lisbon, --tz UTC or --tz Local", "bad time zone %q: %v", req.TZ, err)
	}
	if req.Meta, err = metaFlags(c); err != nil {
		return req, err
	}
	switch mmr := c.Float64("mmr"); {
	case c.IsSet("mmr") && (mmr <= 0 || mmr >= 1):
		return req, usage("--mmr 0.7 (in (0,1); lower is more diverse)", "bad --mmr %g", mmr)
	case c.IsSet("mmr"):
		req.MMR = mmr
	case c.Bool("diverse"):
		req.MMR = 0.7
	}
	switch req.Origin {
	case "", "all", "own", "shared":
	default:
		return req, usage("--origin takes own, shared or all", "unknown origin %q", req.Origin)
	}
	if _, err := query.ParseMode(req.Mode); err != nil {
		return req, usage("--mode takes hybrid, bm25 or vector", "%v", err)
	}
	return req, nil
}

// queryError turns the query package's input errors into usage errors.
func queryError(err error) error {
	switch {
	case errors.Is(err, query.ErrBadBudget):
		return usage("raise --budget (the empty context alone needs a few tokens)", "%v", err)
	case errors.Is(err, query.ErrEmptyQuery):
		return usage(`ucl query "what to look for"`, "%v", err)
	case errors.Is(err, query.ErrBadMode):
		return usage("--mode takes hybrid, bm25 or vector; vector needs the vector projection", "%v", err)
	case errors.Is(err, query.ErrBadFilter), errors.Is(err, query.ErrBadTimeRange), errors.Is(err, query.ErrBadK), errors.Is(err, query.ErrBadFormat):
		return usage("see `ucl help query`", "%v", err)
	}
	return err
}

func printResponse(c *cli.Context, resp *ucl.SearchResult, explain bool) {
	if explain {
		printf(c, "searched: %q (mode %s, now %s)\n", resp.SearchText, resp.Mode, fmtMS(resp.Now))
		for _, m := range resp.Temporal {
			printf(c, "time phrase %q → [%s, %s)\n", m.Phrase, fmtMS(m.Since), fmtMS(m.Until))
		}
		if resp.Since != 0 || resp.Until != 0 {
			printf(c, "time filter: [%s, %s)\n", fmtMS(resp.Since), fmtMS(resp.Until))
		}
		if len(resp.Prefilter) > 0 {
			printf(c, "pre-filtered to %d sessions: %s\n", len(resp.Prefilter), strings.Join(resp.Prefilter, ", "))
		}
	}
	if tf := resp.TimeFilter; tf != nil {
		var ps []string
		for _, m := range tf.Phrases {
			ps = append(ps, fmt.Sprintf("%q → %s", m.Phrase, fmtWindow(m.Since, m.Until)))
		}
		switch {
		case tf.Mode == "filter" && tf.Without != nil:
			printf(c, "no results: %s; 0 results, %s without the time filter (--no-time)\n", strings.Join(ps, ", "), countWithout(*tf.Without, c.Int("k")))
			return
		case tf.Mode == "boost":
			printf(c, "note: %s: no result is from that time; these are the best matches from other times (--no-time ignores the phrase)\n", strings.Join(ps, ", "))
		}
	}
	if len(resp.Results) == 0 {
		printf(c, "no results\n")
		return
	}
	for i, r := range resp.Results {
		who := r.Role
		if who == "" {
			who = r.Kind
		}
		sess := r.Session
		if sess == "" {
			sess = "-"
		}
		printf(c, "%2d. %s  %s  %s  %s  (seq %d, score %.4f)\n", i+1, fmtMS(r.Time), sess, who, r.ChunkID, r.Seq, r.Score)
		if r.Tool != nil {
			printf(c, "    tool %s %s [%s]\n", r.Tool.Name, snippet(r.Tool.Args, 120), r.Tool.Status)
		}
		if len(r.SupersededBy) > 0 {
			printf(c, "    superseded by %s\n", strings.Join(r.SupersededBy, ", "))
		}
		printf(c, "    %s\n", snippet(r.Content, 240))
		if r.ChunkParent != "" {
			printf(c, "    part %d of document %s (`ucl get %s` prints it whole)\n", r.ChunkIndex+1, r.ChunkParent, r.ChunkParent)
		}
		if explain && r.Explain != nil {
			x := r.Explain
			printf(c, "    bm25 %s  ann %s (weight %.3f)  relevance %.4f  neighbours %.4f  session %.3f  recency ×%.3f  affinity ×%.3f  time ×%.3f  = %.5f\n",
				rankStr(x.BM25Rank, x.BM25Score), rankStr(x.ANNRank, x.ANNScore), x.ANNWeight, x.RRF, x.Neighbour, x.SessionSc, x.Recency, x.Affinity, x.Temporal, x.Final)
		}
	}
}

// countWithout says how many results the query has without its time
// phrases: a full page means there may be more.
func countWithout(n, k int) string {
	if n > 0 && n >= k {
		return fmt.Sprintf("%d or more", n)
	}
	return fmt.Sprint(n)
}

// fmtWindow renders a time filter, as dates when it covers whole UTC days.
func fmtWindow(since, until int64) string {
	const day = 24 * 60 * 60 * 1000
	whole := since%day == 0 && until%day == 0
	date := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.DateOnly) }
	switch {
	case since == 0 && until == 0:
		return "no window"
	case since == 0:
		return "before " + fmtMS(until)
	case until == 0:
		return "since " + fmtMS(since)
	case whole && until-since == day:
		return date(since)
	case whole:
		return date(since) + " to " + date(until-day)
	}
	return fmt.Sprintf("[%s, %s)", fmtMS(since), fmtMS(until))
}

func rankStr(rank int, score float64) string {
	if rank == 0 {
		return "—"
	}
	return fmt.Sprintf("#%d (%.3f)", rank, score)
}

func fmtMS(ms int64) string {
	if ms == 0 {
		return "open"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
