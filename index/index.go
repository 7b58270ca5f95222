package index

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/projections/dedup"
	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/query"
)

// Tiers and bounds (see Build).
const (
	// Full is how many matches the index shows in full at most.
	Full = 50
	// Snippets is how many matches it lists as dated snippets at most.
	Snippets = 500
	// MaxMatches caps the matches of a query the index counts and groups;
	// beyond it the counts are lower bounds (Capped).
	MaxMatches = 200_000
	// MinBudget is the smallest token budget an index accepts.
	MinBudget = 100
	// snippetRunes is the length of a snippet or a group's summary.
	snippetRunes = 140
	// maxTopics is how many topic clusters the index builds at most.
	maxTopics = 12
)

// Request is what Build maps: an index request parsed by the engine.
type Request struct {
	// Query is the query as asked (shown in the header and repeated in
	// links); Text its words left once time phrases became Since/Until
	// ("": every live item); Empty is set when the time phrases leave no
	// window (nothing matches).
	Query string
	Text  string
	Empty bool
	// Sessions and Kinds filter (empty: all); Since and Until bound the
	// content time (unix ms, 0: open).
	Sessions, Kinds []string
	Since, Until    int64
	// Meta keeps only items whose meta holds every pair (exact keys and
	// values); it is repeated in links.
	Meta map[string]string
	// Now is the reference time; NowArg the request's own "now" ("" if it
	// gave none), repeated in links so they open the same view.
	Now    time.Time
	NowArg string
	Budget int // tokens of Text, at least MinBudget
}

// Link is a call that opens a group: an engine method (its wire name in
// the method table) and the arguments of its request (by their JSON
// names). Each face renders it in its own syntax (a CLI command, an MCP
// tool call); String is the engine's own form.
type Link struct {
	Method string         `json:"method"`
	Args   map[string]any `json:"args"`
}

// String renders the link as METHOD {ARGS as JSON}, the form Text carries.
func (l Link) String() string { return l.Method + " " + callJSON(l.Args) }

// reserve is how many tokens more than String a line counts for its link,
// so that a face's own rendering of it still fits the budget: a rendering
// may be up to 4+8·v bytes (plus 3 per single quote in a value) and 1+2·v
// words longer than String, v the link's values (strings, list items).
func (l Link) reserve() int {
	v, quotes := 0, 0
	count := func(s string) { v++; quotes += strings.Count(s, "'") }
	for _, a := range l.Args {
		switch a := a.(type) {
		case string:
			count(a)
		case []string:
			for _, s := range a {
				count(s)
			}
		case map[string]string:
			for k, s := range a {
				count(k + "=" + s)
			}
		}
	}
	bytes, words := 4+8*v+3*quotes, 1+2*v
	return max((bytes+3)/4, (words*4+2)/3) + 1
}

// Item is one match shown in full (Content) or as a snippet.
type Item struct {
	ID      string `json:"id"`
	Seq     uint64 `json:"seq"`
	Time    string `json:"time"`
	Session string `json:"session,omitempty"`
	Role    string `json:"role,omitempty"`
	Kind    string `json:"kind"`
	Content string `json:"content,omitempty"`
	Snippet string `json:"snippet,omitempty"`
}

// Group is a group of matches: a session, a month or a topic.
type Group struct {
	Key      string   `json:"key"` // session id, YYYY-MM, or topic term
	Label    string   `json:"label,omitempty"`
	Matches  int      `json:"matches"`
	Sessions int      `json:"sessions,omitempty"`
	First    string   `json:"first"`
	Last     string   `json:"last"`
	Summary  string   `json:"summary,omitempty"` // the session's L0 summary (shortened)
	IDs      []string `json:"session_ids,omitempty"`
	// Open is the call that opens the group; Text shows it (as
	// Link.String, or as a face rewrote it) after the group's line.
	Open Link `json:"open"`
}

// Overview counts the matches by content time, in disjoint windows
// before Now (UTC): today, earlier this week (from Monday), earlier this
// month, older. Later counts content times after Now.
type Overview struct {
	Later     int `json:"later,omitempty"`
	Today     int `json:"today"`
	ThisWeek  int `json:"this_week"`
	ThisMonth int `json:"this_month"`
	Older     int `json:"older"`
}

// Omitted counts what matched but the budget left out.
type Omitted struct {
	Matches  int `json:"matches"`
	Sessions int `json:"sessions"`
	Months   int `json:"months"`
	Topics   int `json:"topics"`
}

// Result is the index: structured, and as Text under the budget.
type Result struct {
	Query    string   `json:"query,omitempty"`
	Now      string   `json:"now"`
	Since    int64    `json:"since_ms,omitempty"` // effective time filter
	Until    int64    `json:"until_ms,omitempty"`
	Matches  int      `json:"matches"`
	Capped   bool     `json:"capped,omitempty"` // Matches is a lower bound
	Overview Overview `json:"overview"`
	Items    []Item   `json:"items"`
	Snippets []Item   `json:"snippets"`
	Sessions []Group  `json:"sessions"`
	Months   []Group  `json:"months"`
	Topics   []Group  `json:"topics"`
	Omitted  Omitted  `json:"omitted"`
	Budget   int      `json:"budget"`
	Tokens   int      `json:"tokens"` // textutil.EstimateTokens(Text)
	Text     string   `json:"text"`
}

// Build builds a map of the store an LLM can navigate with the other
// calls, always within req.Budget tokens (textutil.EstimateTokens of Text,
// with each link counted as its face may render it, see Link): up to Full
// matches in full when there are that few; else up to Snippets as dated
// snippets with ids; beyond that groups — sessions (with counts, time
// spans, L0 summaries), months and topic clusters (the sessions' L0 key
// terms, clustered greedily) — each with the call that opens it, then the
// best matches as snippets in the budget left; and always a time
// overview. Matches of a query are ranked by BM25 (ties by chunk id);
// without a query, newest first. It is deterministic given req.Now. set
// must be at the log head; it reads its dedup, timelines, full-text and
// summary projections.
func Build(ctx context.Context, set *projstd.Set, req Request) (*Result, error) {
	text, now, since, until, empty := req.Text, req.Now, req.Since, req.Until, req.Empty
	if set.Dedup == nil || set.Timelines == nil {
		return nil, fmt.Errorf("index: the dedup and timelines projections are needed")
	}
	var matches []dedup.Item
	capped := false
	switch {
	case empty:
	case text != "":
		if set.FTS == nil {
			return nil, fmt.Errorf("index: the full-text projection is needed for a query")
		}
		hits, err := set.FTS.Search(ctx, fts.Query{Text: text, K: MaxMatches, Sessions: req.Sessions, Kinds: req.Kinds, Since: since, Until: until, Meta: req.Meta})
		if err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		capped = len(hits) == MaxMatches
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.ChunkID
		}
		if matches, err = set.Dedup.Items(ids); err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
	default:
		keep := Filter(req.Sessions, req.Kinds, since, until)
		each := set.Dedup.Each
		if len(req.Meta) > 0 {
			// The meta terms of the full-text projection find the items;
			// the other filters apply to them as to every item.
			if set.FTS == nil {
				return nil, fmt.Errorf("index: the full-text projection is needed for a meta filter")
			}
			ids, more, err := set.FTS.WithMeta(ctx, req.Meta, MaxMatches)
			if err != nil {
				return nil, fmt.Errorf("index: %w", err)
			}
			capped = more
			items, err := set.Dedup.Items(ids)
			if err != nil {
				return nil, fmt.Errorf("index: %w", err)
			}
			each = func(f func(dedup.Item) error) error {
				for _, it := range items {
					if err := f(it); err != nil {
						return err
					}
				}
				return nil
			}
		}
		err := each(func(it dedup.Item) error {
			if keep(it) {
				matches = append(matches, it)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		sort.Slice(matches, func(i, j int) bool {
			a, b := matches[i], matches[j]
			if a.Time != b.Time {
				return a.Time > b.Time
			}
			if a.Seq != b.Seq {
				return a.Seq > b.Seq
			}
			return a.ChunkID < b.ChunkID
		})
	}
	b := &indexBuilder{set: set, req: req, text: text, now: now, since: since, until: until, matches: matches}
	res := &Result{Query: req.Query, Now: now.Format(time.RFC3339), Since: since, Until: until,
		Matches: len(matches), Capped: capped, Budget: req.Budget,
		Items: []Item{}, Snippets: []Item{}, Sessions: []Group{}, Months: []Group{}, Topics: []Group{}}
	if err := b.build(res); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return res, nil
}

// Filter reports whether an item is in one of sessions and kinds (empty:
// any) with a content time in [since, until) (0: open).
func Filter(sessions, kinds []string, since, until int64) func(dedup.Item) bool {
	in := func(list []string, v string) bool {
		if len(list) == 0 {
			return true
		}
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	}
	return func(it dedup.Item) bool {
		return in(sessions, it.Session) && in(kinds, it.Kind.String()) &&
			(since == 0 || it.Time >= since) && (until == 0 || it.Time < until)
	}
}

// indexBuilder packs an index under the budget.
type indexBuilder struct {
	set          *projstd.Set
	req          Request
	text         string
	now          time.Time
	since, until int64
	matches      []dedup.Item

	lines  []string
	tokens int // sum of EstimateTokens(line+"\n") and links' reserves: at least the text's count minus one
}

// line is a line of a section and the tokens it counts for beyond its
// own: its link's reserve.
type line struct {
	text  string
	extra int
}

// fits reports whether line (and reserve tokens after it) still fit.
func (b *indexBuilder) fits(line string, reserve int) bool {
	return b.tokens+textutil.EstimateTokens(line+"\n")+reserve+1 <= b.req.Budget
}

func (b *indexBuilder) add(line string) {
	b.lines = append(b.lines, line)
	b.tokens += textutil.EstimateTokens(line + "\n")
}

// section adds title and then lines while they fit under limit tokens
// used in total (and the budget), keeping reserve free; it returns how
// many lines it added.
func (b *indexBuilder) section(title string, lines []line, limit, reserve int) int {
	if len(lines) == 0 {
		return 0
	}
	cost := func(l line) int { return textutil.EstimateTokens(l.text+"\n") + l.extra }
	limit = min(limit, b.req.Budget)
	if b.tokens+textutil.EstimateTokens(title+"\n")+cost(lines[0])+reserve+1 > limit {
		return 0
	}
	b.add(title)
	n := 0
	for _, ln := range lines {
		if b.tokens+cost(ln)+reserve+1 > limit {
			break
		}
		b.add(ln.text)
		b.tokens += ln.extra
		n++
	}
	return n
}

// Rewrite renders the link of every group Text shows with render (a
// face's own syntax) and recounts Tokens. Text stays within the budget
// when each rendering is within the bounds Link.reserve allows for.
func Rewrite(res *Result, render func(Link) string) {
	to := map[string]string{}
	for _, gs := range [][]Group{res.Months, res.Topics, res.Sessions} {
		for _, g := range gs {
			to[g.Open.String()] = render(g.Open)
		}
	}
	const arrow = " → "
	lines := strings.SplitAfter(res.Text, "\n")
	for i, ln := range lines {
		body := strings.TrimSuffix(ln, "\n")
		// The link ends the line; an arrow may also occur inside it.
		for at := strings.Index(body, arrow); at >= 0; {
			if r, ok := to[body[at+len(arrow):]]; ok {
				lines[i] = body[:at+len(arrow)] + r + ln[len(body):]
				break
			}
			next := strings.Index(body[at+len(arrow):], arrow)
			if next < 0 {
				break
			}
			at += len(arrow) + next
		}
	}
	res.Text = strings.Join(lines, "")
	res.Tokens = textutil.EstimateTokens(res.Text)
}

func fmtDay(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02") }

// fmtBound is a time bound as a call gives it: a date at midnight, else
// RFC 3339 to the millisecond.
func fmtBound(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	if t.Equal(t.Truncate(24 * time.Hour)) {
		return t.Format("2006-01-02")
	}
	return t.Format("2006-01-02T15:04:05.999Z07:00")
}
func fmtTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04") }

// Snippet is s as an index shows it in a snippet or a group's summary:
// white space made single spaces, cut to snippetRunes runes with "…".
func Snippet(s string) string { return shorten(s, snippetRunes) }

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}

func callJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}" // maps of strings always marshal
	}
	return string(b)
}

// zoom is the index call restricted further.
func (b *indexBuilder) zoom(q string, sessions []string, since, until int64) Link {
	args := map[string]any{}
	if q != "" {
		args["query"] = q
	}
	if len(sessions) > 0 {
		args["sessions"] = sessions
	}
	if len(b.req.Kinds) > 0 {
		args["kinds"] = b.req.Kinds
	}
	if since != 0 {
		args["since"] = fmtBound(since)
	}
	if until != 0 {
		args["until"] = fmtBound(until)
	}
	if len(b.req.Meta) > 0 {
		args["meta"] = b.req.Meta
	}
	if b.req.NowArg != "" {
		args["now"] = b.req.NowArg
	}
	return Link{Method: "index", Args: args}
}

// linked is a group's line with its link, and what the line counts for
// beyond its own tokens.
func linked(line string, l Link) (string, int) { return line + " → " + l.String(), l.reserve() }

func (b *indexBuilder) build(res *Result) error {
	ms := b.matches
	// Overview.
	day := time.Date(b.now.Year(), b.now.Month(), b.now.Day(), 0, 0, 0, 0, time.UTC)
	week := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	month := time.Date(b.now.Year(), b.now.Month(), 1, 0, 0, 0, 0, time.UTC)
	nowMS, dayMS, weekMS, monthMS := b.now.UnixMilli(), day.UnixMilli(), week.UnixMilli(), month.UnixMilli()
	for _, m := range ms {
		switch {
		case m.Time > nowMS:
			res.Overview.Later++
		case m.Time >= dayMS:
			res.Overview.Today++
		case m.Time >= weekMS:
			res.Overview.ThisWeek++
		case m.Time >= monthMS:
			res.Overview.ThisMonth++
		default:
			res.Overview.Older++
		}
	}
	what := "the whole store"
	if b.req.Query != "" {
		what = fmt.Sprintf("%q", b.req.Query)
	}
	var filters []string
	if len(b.req.Sessions) > 0 {
		filters = append(filters, "sessions "+strings.Join(b.req.Sessions, ","))
	}
	if len(b.req.Kinds) > 0 {
		filters = append(filters, "kinds "+strings.Join(b.req.Kinds, ","))
	}
	if b.since != 0 {
		filters = append(filters, "from "+fmtTime(b.since))
	}
	if b.until != 0 {
		filters = append(filters, "before "+fmtTime(b.until))
	}
	head := fmt.Sprintf("INDEX of %s", what)
	if len(filters) > 0 {
		head += " (" + strings.Join(filters, "; ") + ")"
	}
	count := fmt.Sprintf("%d", len(ms))
	if res.Capped {
		count = "at least " + count
	}
	head += fmt.Sprintf(" at %s: %s matches", b.now.Format(time.RFC3339), count)
	o := res.Overview
	over := fmt.Sprintf("by time: today %d · earlier this week %d · earlier this month %d · older %d", o.Today, o.ThisWeek, o.ThisMonth, o.Older)
	if o.Later > 0 {
		over += fmt.Sprintf(" · after now %d", o.Later)
	}
	if !b.fits(head, textutil.EstimateTokens(over+"\n")) {
		return fmt.Errorf("budget %d: %w: the index header alone needs more", b.req.Budget, query.ErrBadBudget)
	}
	b.add(head)
	b.add(over)
	const footerReserve = 40
	shown := 0 // matches shown (full or snippet), a prefix of ms
	n := len(ms)
	switch {
	case n == 0:
		b.add("no matches.")
	case n <= Full:
		k, err := b.fullItems(res, footerReserve)
		if err != nil {
			return err
		}
		shown = k
		k, err = b.snippets(res, shown, n, b.req.Budget, footerReserve, "matches (snippets; the budget left no room for them in full)")
		if err != nil {
			return err
		}
		shown += k
	case n <= Snippets:
		k, err := b.snippets(res, 0, n, b.req.Budget, footerReserve, "matches, best first (snippets; get opens one by id)")
		if err != nil {
			return err
		}
		shown = k
	}
	if shown < n {
		// Groups: everything not shown lies in them. Beyond Snippets
		// the best matches come first, in a quarter of the budget left.
		if n > Snippets {
			limit := b.tokens + (b.req.Budget-b.tokens-footerReserve)/4
			k, err := b.snippets(res, 0, min(n, Full), limit, footerReserve, "best matches (snippets)")
			if err != nil {
				return err
			}
			shown = k
		}
		if err := b.groups(res, footerReserve); err != nil {
			return err
		}
	}
	res.Omitted.Matches = n - shown
	if res.Omitted.Matches > 0 {
		foot := fmt.Sprintf("(%d matches not listed one by one", res.Omitted.Matches)
		if g := res.Omitted.Sessions + res.Omitted.Months + res.Omitted.Topics; g > 0 {
			foot += fmt.Sprintf("; %d sessions, %d months, %d topics not shown", res.Omitted.Sessions, res.Omitted.Months, res.Omitted.Topics)
		}
		foot += ": open a group, or narrow with a query, sessions or since/until)"
		if b.fits(foot, 0) {
			b.add(foot)
		}
	}
	res.Text = strings.Join(b.lines, "\n") + "\n"
	res.Tokens = textutil.EstimateTokens(res.Text)
	if res.Tokens > b.req.Budget {
		return fmt.Errorf("%d tokens over budget %d: %w", res.Tokens, b.req.Budget, query.ErrBadBudget)
	}
	return nil
}

// fullItems adds matches in full while they fit, from the first.
func (b *indexBuilder) fullItems(res *Result, reserve int) (int, error) {
	title := "matches in full (best first):"
	added := false
	for i, m := range b.matches {
		c, ok, err := b.set.Timelines.Chunk(m.ChunkID)
		if err != nil {
			return 0, err
		}
		if !ok {
			return i, fmt.Errorf("chunk %s: in the dedup projection, not in timelines", m.ChunkID)
		}
		ln := fmt.Sprintf("[%s] %s %s %s: %s", c.ID, fmtTime(c.Time), whoOf(c.Session, c.Role), c.Kind, c.Content)
		extra := 0
		if !added {
			extra = textutil.EstimateTokens(title + "\n")
		}
		if !b.fits(ln, reserve+extra) {
			return i, nil
		}
		if !added {
			b.add(title)
			added = true
		}
		b.add(ln)
		res.Items = append(res.Items, Item{ID: c.ID, Seq: c.Seq, Time: time.UnixMilli(c.Time).UTC().Format(time.RFC3339),
			Session: c.Session, Role: c.Role, Kind: c.Kind.String(), Content: c.Content})
	}
	return len(b.matches), nil
}

func whoOf(session, role string) string {
	if session == "" {
		session = "-"
	}
	if role == "" {
		return session
	}
	return session + "/" + role
}

// snippets lists matches [from, to) as snippets while they fit in limit.
func (b *indexBuilder) snippets(res *Result, from, to, limit, reserve int, title string) (int, error) {
	added := false
	for i := from; i < to; i++ {
		m := b.matches[i]
		c, ok, err := b.set.Timelines.Chunk(m.ChunkID)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, fmt.Errorf("chunk %s: in the dedup projection, not in timelines", m.ChunkID)
		}
		sn := shorten(c.Content, snippetRunes)
		ln := fmt.Sprintf("- %s %s %s: %s", c.ID, fmtDay(c.Time), whoOf(c.Session, c.Role), sn)
		extra := 0
		if !added {
			extra = textutil.EstimateTokens(title + ":\n")
		}
		if b.tokens+textutil.EstimateTokens(ln+"\n")+reserve+extra+1 > min(limit, b.req.Budget) {
			return i - from, nil
		}
		if !added {
			b.add(title + ":")
			added = true
		}
		b.add(ln)
		res.Snippets = append(res.Snippets, Item{ID: c.ID, Seq: c.Seq, Time: time.UnixMilli(c.Time).UTC().Format(time.RFC3339),
			Session: c.Session, Role: c.Role, Kind: c.Kind.String(), Snippet: sn})
	}
	return to - from, nil
}

type sessAgg struct {
	id          string
	n           int
	first, last int64
}

// groups adds the month, topic and session groups of every match while
// they fit: months in up to a quarter of the budget left, topics in up to
// a third of what is left then, sessions (the many) in the rest.
func (b *indexBuilder) groups(res *Result, reserve int) error {
	limit := b.req.Budget
	bySess := map[string]*sessAgg{}
	byMonth := map[string]*sessAgg{}
	monthSessions := map[string]map[string]bool{}
	for _, m := range b.matches {
		a := bySess[m.Session]
		if a == nil {
			a = &sessAgg{id: m.Session, first: m.Time, last: m.Time}
			bySess[m.Session] = a
		}
		a.n++
		a.first, a.last = min(a.first, m.Time), max(a.last, m.Time)
		mk := time.UnixMilli(m.Time).UTC().Format("2006-01")
		ma := byMonth[mk]
		if ma == nil {
			ma = &sessAgg{id: mk, first: m.Time, last: m.Time}
			byMonth[mk] = ma
			monthSessions[mk] = map[string]bool{}
		}
		ma.n++
		ma.first, ma.last = min(ma.first, m.Time), max(ma.last, m.Time)
		monthSessions[mk][m.Session] = true
	}
	sess := make([]*sessAgg, 0, len(bySess))
	for _, a := range bySess {
		sess = append(sess, a)
	}
	sort.Slice(sess, func(i, j int) bool {
		if sess[i].n != sess[j].n {
			return sess[i].n > sess[j].n
		}
		if sess[i].last != sess[j].last {
			return sess[i].last > sess[j].last
		}
		return sess[i].id < sess[j].id
	})
	months := make([]*sessAgg, 0, len(byMonth))
	for _, a := range byMonth {
		months = append(months, a)
	}
	sort.Slice(months, func(i, j int) bool { return months[i].id > months[j].id })

	// Months: a quarter of what is left.
	monthLimit := b.tokens + (limit-b.tokens-reserve)/4
	var monthLines []line
	var monthGroups []Group
	for _, a := range months {
		t, err := time.Parse("2006-01", a.id)
		if err != nil {
			return err
		}
		lo, hi := t.UnixMilli(), t.AddDate(0, 1, 0).UnixMilli()
		if b.since != 0 && b.since > lo {
			lo = b.since
		}
		if b.until != 0 && b.until < hi {
			hi = b.until
		}
		g := Group{Key: a.id, Matches: a.n, Sessions: len(monthSessions[a.id]),
			First: time.UnixMilli(a.first).UTC().Format(time.RFC3339), Last: time.UnixMilli(a.last).UTC().Format(time.RFC3339)}
		g.Open = b.zoom(b.req.Query, b.req.Sessions, lo, hi)
		ln, extra := linked(fmt.Sprintf("- %s: %d matches in %d sessions", a.id, a.n, g.Sessions), g.Open)
		monthLines = append(monthLines, line{ln, extra})
		monthGroups = append(monthGroups, g)
	}
	k := b.section(fmt.Sprintf("months (%d, newest first):", len(months)), monthLines, monthLimit, reserve)
	res.Months = append(res.Months, monthGroups[:k]...)
	res.Omitted.Months = len(months) - k

	topics, err := b.topics(sess)
	if err != nil {
		return err
	}
	var topicLines []line
	for _, g := range topics {
		ln, extra := linked(fmt.Sprintf("- %s: %d matches in %d sessions, %s..%s", g.Label, g.Matches, g.Sessions, g.First[:10], g.Last[:10]), g.Open)
		topicLines = append(topicLines, line{ln, extra})
	}
	k = b.section(fmt.Sprintf("topics (%d, from the sessions' key terms):", len(topics)), topicLines, b.tokens+(limit-b.tokens-reserve)/3, reserve)
	res.Topics = append(res.Topics, topics[:k]...)
	res.Omitted.Topics = len(topics) - k
	// Sessions: the rest.
	sessLimit := limit
	var sessLines []line
	var sessGroups []Group
	for _, a := range sess {
		if len(sessLines) >= Snippets {
			break
		}
		g := Group{Key: a.id, Matches: a.n, First: time.UnixMilli(a.first).UTC().Format(time.RFC3339), Last: time.UnixMilli(a.last).UTC().Format(time.RFC3339)}
		if a.id == "" {
			g.Label = "(no session)"
			g.Open = b.zoom(b.req.Query, nil, b.since, b.until)
		} else {
			if b.set.Summary != nil {
				sum, ok, err := b.set.Summary.Session(a.id)
				if err != nil {
					return err
				}
				if ok {
					g.Summary = shorten(sum.Text, snippetRunes)
				}
			}
			if b.req.Query == "" && len(b.req.Kinds) == 0 && b.since == 0 && b.until == 0 {
				g.Open = Link{Method: "session", Args: map[string]any{"id": a.id}}
			} else {
				g.Open = b.zoom(b.req.Query, []string{a.id}, b.since, b.until)
			}
		}
		name := g.Label
		if name == "" {
			name = "session " + a.id
		}
		ln := fmt.Sprintf("- %s: %d matches, %s..%s", name, a.n, fmtDay(a.first), fmtDay(a.last))
		if g.Summary != "" {
			ln += " — " + g.Summary
		}
		ln, extra := linked(ln, g.Open)
		sessLines = append(sessLines, line{ln, extra})
		sessGroups = append(sessGroups, g)
		// Stop building lines far past what can fit (summaries cost reads).
		if len(sessLines)*12 > b.req.Budget {
			break
		}
	}
	k = b.section(fmt.Sprintf("sessions (%d, most matches first):", len(sess)), sessLines, sessLimit, reserve)
	res.Sessions = append(res.Sessions, sessGroups[:k]...)
	res.Omitted.Sessions = len(sess) - k

	return nil
}

// topics clusters the matching sessions by their L0 key terms, greedily:
// the term whose sessions (not yet in a topic) hold the most matches
// (ties: the term) makes a topic of those sessions, if there are at least
// two; terms of the query are skipped (every match has them). At most
// maxTopics topics, from the 2,000 sessions with the most matches.
func (b *indexBuilder) topics(sess []*sessAgg) ([]Group, error) {
	if b.set.Summary == nil {
		return nil, nil
	}
	skip := map[string]bool{}
	for _, w := range textutil.ContentWords(b.text) {
		skip[strings.ToLower(w)] = true
	}
	terms := map[string][]*sessAgg{}
	sessTerms := map[string][]string{}
	for i, a := range sess {
		if i >= 2000 {
			break
		}
		if a.id == "" {
			continue
		}
		sum, ok, err := b.set.Summary.Session(a.id)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for _, t := range sum.KeyTerms {
			if skip[t] || strings.Trim(t, "0123456789") == "" {
				continue // numbers name no topic
			}
			terms[t] = append(terms[t], a)
			sessTerms[a.id] = append(sessTerms[a.id], t)
		}
	}
	// A term of most sessions separates nothing.
	nSess := len(sessTerms)
	for t, ss := range terms {
		if nSess >= 4 && len(ss)*2 > nSess {
			delete(terms, t)
		}
	}
	taken := map[string]bool{}
	var out []Group
	for len(out) < maxTopics {
		best, bestN := "", 0
		for t, ss := range terms {
			n, k := 0, 0
			for _, a := range ss {
				if !taken[a.id] {
					n += a.n
					k++
				}
			}
			if k < 2 {
				continue
			}
			if n > bestN || (n == bestN && t < best) {
				best, bestN = t, n
			}
		}
		if best == "" {
			break
		}
		g := Group{Key: best, Matches: bestN}
		co := map[string]int{}
		var first, last int64
		for _, a := range terms[best] {
			if taken[a.id] {
				continue
			}
			taken[a.id] = true
			g.IDs = append(g.IDs, a.id)
			if first == 0 || a.first < first {
				first = a.first
			}
			last = max(last, a.last)
			for _, t := range sessTerms[a.id] {
				if t != best {
					co[t]++
				}
			}
		}
		sort.Strings(g.IDs)
		g.Sessions = len(g.IDs)
		g.First, g.Last = time.UnixMilli(first).UTC().Format(time.RFC3339), time.UnixMilli(last).UTC().Format(time.RFC3339)
		cos := make([]string, 0, len(co))
		for t := range co {
			cos = append(cos, t)
		}
		sort.Slice(cos, func(i, j int) bool {
			if co[cos[i]] != co[cos[j]] {
				return co[cos[i]] > co[cos[j]]
			}
			return cos[i] < cos[j]
		})
		g.Label = fmt.Sprintf("%q", best)
		if len(cos) > 0 {
			g.Label += " (with " + strings.Join(cos[:min(3, len(cos))], ", ") + ")"
		}
		if len(g.IDs) <= 8 {
			g.Open = b.zoom(b.req.Query, g.IDs, b.since, b.until)
		} else {
			g.Open = b.zoom(best, b.req.Sessions, b.since, b.until)
		}
		out = append(out, g)
	}
	return out, nil
}
