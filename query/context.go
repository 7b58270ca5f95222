package query

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// Format is a rendering of an assembled context.
type Format string

// Formats.
const (
	FormatXML  Format = "xml"
	FormatJSON Format = "json"
	FormatText Format = "text"
)

// ParseFormat parses a format name ("" is xml).
func ParseFormat(s string) (Format, error) {
	switch Format(strings.ToLower(strings.TrimSpace(s))) {
	case "", FormatXML:
		return FormatXML, nil
	case FormatJSON:
		return FormatJSON, nil
	case FormatText, "txt", "plain":
		return FormatText, nil
	}
	return "", fmt.Errorf("parse format %q: %w: want xml, json or text", s, ErrBadFormat)
}

// Context defaults.
const (
	// DefaultContextK is the fewest ranked chunks considered when
	// Request.K is 0; a larger budget considers more (ContextK).
	DefaultContextK   = 20
	DefaultFullChunks = 3 // best-ranked chunks kept whole when they fit
	// DefaultChunkTokens is the most a lower-ranked chunk keeps of itself
	// when ContextRequest.ChunkTokens is 0 (it starts as a snippet of
	// SnippetTokens and grows while the budget allows).
	DefaultChunkTokens = 150
	// minSlack: with fewer tokens left, packing stops trying chunks (a turn
	// header alone costs more).
	minSlack = 8
	// MaxBudget caps ContextRequest.Budget (a larger budget is lowered).
	MaxBudget = 1 << 20
)

// ContextK is how many ranked chunks a context of budget tokens considers
// when Request.K is 0: enough snippets (~20 tokens each with their header)
// to fill the budget, at least DefaultContextK, at most MaxK. A budget left
// unused is evidence left out; chunks that do not fit are cheap to skip.
func ContextK(budget int) int {
	return min(max(budget/20, DefaultContextK), MaxK)
}

// SnippetTokens bounds what a chunk below the first FullChunks keeps of
// itself when ContextRequest.ChunkTokens is 0: the sentence about the
// query, about one clause. Placed as snippets, a small budget holds more
// ranked chunks than it would hold whole; the budget left then grows them
// back in rank order (Assemble). On the LoCoMo development set the
// evidence reached a 1,000-token context for 87.5% of the questions with
// 150-token chunks and for 90.9% with snippets, a 4,000-token one for
// 94.5% and 96.9% (the other LoCoMo conversations: 86.5% → 90.7% and
// 94.7% → 96.5%).
const SnippetTokens = 20

// ContextRequest asks for a context: Request selects and ranks the chunks
// (Request.Session is the active session; Request.K the number of ranked
// chunks considered, default ContextK(Budget)).
type ContextRequest struct {
	Request
	// Budget is the most tokens the whole rendered output may count.
	Budget int
	// RecentTurns is how many of the active session's last turns open the
	// context (0: none).
	RecentTurns int
	Format      Format // "" is xml
	// FullChunks is how many of the best-ranked chunks are kept whole when
	// they fit (default DefaultFullChunks; negative: none).
	FullChunks int
	// ChunkTokens bounds what lower-ranked chunks keep of themselves: the
	// sentences about the query (snippet), else their key sentences
	// (default: SnippetTokens, grown up to DefaultChunkTokens while the
	// budget allows).
	ChunkTokens int
	// Exclude, when set, leaves out every recent turn and ranked chunk
	// whose content it reports: what the caller already carries (the
	// messages of a proxied chat request) is not sent twice.
	Exclude func(content string) bool
	// Also is another engine (another origin: see Options.Owner) whose
	// ranked chunks compete for the budget by final score. A chunk whose id
	// the first engine already placed is not placed twice.
	Also *Engine
}

// Assembly is an assembled context and how it was made.
type Assembly struct {
	Output   []byte          `json:"-"`
	Format   Format          `json:"format"`
	Tokens   int             `json:"tokens"` // Tokenizer count of Output, ≤ Budget
	Budget   int             `json:"budget"`
	Recent   []string        `json:"recent"`   // chunk ids of the recent turns included
	Included []string        `json:"included"` // ranked chunk ids included, in rank order
	Trimmed  []string        `json:"trimmed"`  // chunk ids included as key sentences only
	Dropped  []string        `json:"dropped"`  // ranked chunk ids that did not fit
	Temporal []TemporalMatch `json:"temporal,omitempty"`
}

// Context assembles a context and returns only its rendered bytes.
func (e *Engine) Context(ctx context.Context, req ContextRequest) ([]byte, error) {
	a, err := e.Assemble(ctx, req)
	if err != nil {
		return nil, err
	}
	return a.Output, nil
}

// packed is one chunk placed in the context.
type packed struct {
	c       timelines.Chunk
	content string
	trimmed bool
	from    string // whose memory, for a shared chunk (Options.Owner)
}

// ownerOf says whose memory a chunk of e is ("" for the store's own).
func (e *Engine) ownerOf(id string) string {
	if e.opts.Owner == nil {
		return ""
	}
	return e.opts.Owner(id)
}

// Assemble builds the context of req.
//
// Packing, in this order, each step checking the token count of the whole
// rendering:
//  1. Recent turns of the active session, newest first, within half the
//     budget (the newest alone may use all of it); a turn that does not fit
//     whole is trimmed to its key sentences, and the first that cannot fit
//     even trimmed ends this step (older turns would be out of order).
//  2. Ranked chunks in rank order (those already present skipped). With
//     a ContextRequest.ChunkTokens: the first FullChunks whole if they fit,
//     the others cut to ChunkTokens (the sentence holding the most query
//     words and its neighbours, or the key sentences when none holds one);
//     a chunk that does not fit is cut further to what fits, and dropped
//     only when not even a few words fit. Without one (the default): every
//     chunk as a snippet of SnippetTokens, dropped when it does not fit (a
//     snippet no shorter than one that did not fit since the last placement
//     is dropped untried). Later, smaller chunks may still fit after a
//     drop; once fewer than a turn header's tokens are left, the rest are
//     dropped untried. With Request.K unset, ContextK(Budget) ranked
//     chunks are considered, so a large budget is filled rather than left
//     empty.
//  3. Without a ContextRequest.ChunkTokens, the placed snippets grow back
//     in rank order while they fit: the first FullChunks whole, the others
//     to DefaultChunkTokens of key sentences (all at once when they fit).
//
// Rendering groups chunks: notes (sessionless non-document chunks), then
// documents (by chunk_parent, parts in chunk order; name from meta "name",
// then "title", then the parent id), then sessions by first content time,
// the active session last; turns in content-time order. A session's date
// is the UTC date of its earliest chunk in the context; times are RFC 3339
// UTC. Chunks cut to key sentences carry trimmed="true" (xml), "trimmed":
// true (json) or end with " […]" (text). XML content is escaped (& < > ")
// and characters XML forbids become U+FFFD; every format is valid UTF-8.
func (e *Engine) Assemble(ctx context.Context, req ContextRequest) (*Assembly, error) {
	if e.src.Chunks == nil {
		return nil, fmt.Errorf("assemble context: chunk store: %w", ErrNoSource)
	}
	format, err := ParseFormat(string(req.Format))
	if err != nil {
		return nil, err
	}
	if req.Budget <= 0 {
		return nil, fmt.Errorf("assemble context: budget %d: %w: want a positive number of tokens", req.Budget, ErrBadBudget)
	}
	budget := min(req.Budget, MaxBudget)
	if req.RecentTurns < 0 {
		return nil, fmt.Errorf("assemble context: recent turns %d: %w", req.RecentTurns, ErrBadFilter)
	}
	full := req.FullChunks
	if full == 0 {
		full = DefaultFullChunks
	}
	// Without a ChunkTokens of the caller, lower-ranked chunks are placed
	// as snippets first and grown afterwards while the budget allows.
	chunkTokens, grow := req.ChunkTokens, req.ChunkTokens <= 0
	if grow {
		chunkTokens = SnippetTokens
	}
	hasText := strings.TrimSpace(req.Text) != ""
	if !hasText && (req.Session == "" || req.RecentTurns == 0) {
		return nil, ErrEmptyQuery
	}
	var p *plan
	if hasText {
		sr := req.Request
		if sr.K == 0 {
			sr.K = ContextK(budget)
		}
		if p, err = e.plan(sr); err != nil {
			return nil, err
		}
	}
	tok := e.opts.Tokenizer
	// A ranked chunk below the first FullChunks is cut to the sentences
	// about the query, so a small budget holds more of the ranked chunks.
	var terms map[string]bool
	if hasText {
		terms = snippetTerms(req.Text)
	}
	// Packing asks for the same cut of a chunk more than once (a group
	// that does not fit, then the chunk alone, then its growth): cached.
	type cutKey struct {
		content string
		limit   int
	}
	cuts := map[cutKey]string{}
	trim := func(content string, limit int) string {
		k := cutKey{content, limit}
		if s, ok := cuts[k]; ok {
			return s
		}
		s := snippet(content, terms, limit)
		if s == "" {
			s = e.opts.Trim(content, limit)
		}
		cuts[k] = s
		return s
	}
	r := &renderer{format: format, active: req.Session}
	var items []packed
	cost := func(extra ...packed) int {
		return tok.CountTokens(string(r.render(append(items[:len(items):len(items)], extra...))))
	}
	if n := cost(); n > budget {
		return nil, fmt.Errorf("assemble context: budget %d: %w: the empty %s context alone counts %d tokens", budget, ErrBadBudget, format, n)
	}
	a := &Assembly{Format: format, Budget: budget, Recent: []string{}, Included: []string{}, Trimmed: []string{}, Dropped: []string{}}
	seen := map[string]bool{}
	// fit places c whole if allowed and it fits, else its key sentences
	// within limit tokens, else the largest trim that fits.
	// base is the cost of items as they are, cached: rendering the whole
	// output is the expensive step of packing, and a budget that fills up
	// makes every later chunk ask for it.
	baseN, baseCost := -1, 0
	base := func() int {
		if baseN != len(items) {
			baseN, baseCost = len(items), cost()
		}
		return baseCost
	}
	// A text alone counting more tokens than the slack cannot fit (the
	// rendering holds it and more), so such tries skip the rendering.
	// With a Tokenizer that is not monotone this only loses a chunk, never
	// breaks the budget: every placement is still checked on the whole
	// output.
	fits := func(c timelines.Chunk, from, content string, trimmed bool, within, slack int) bool {
		if content == "" || tok.CountTokens(content) > slack {
			return false
		}
		return cost(packed{c: c, content: content, trimmed: trimmed, from: from}) <= within
	}
	// shrink: a chunk that does not fit at limit is cut further to what
	// fits (not for snippets: cut below SnippetTokens a sentence is a
	// fragment, and the search renders the output once per try).
	fit := func(c timelines.Chunk, from string, whole, shrink bool, limit, within int) bool {
		// The content of what fits costs at most the slack left, so the
		// slack bounds the search (and ends it when nothing is left).
		slack := within - base()
		if slack <= 0 {
			return false
		}
		if whole {
			if fits(c, from, c.Content, false, within, slack) {
				items = append(items, packed{c: c, content: c.Content, from: from})
				return true
			}
		} else if t := trim(c.Content, limit); fits(c, from, t, t != c.Content, within, slack) {
			items = append(items, packed{c: c, content: t, trimmed: t != c.Content, from: from})
			return true
		}
		if !shrink {
			return false
		}
		lo, hi := 0, min(limit, tok.CountTokens(c.Content), slack)
		best := ""
		for lo < hi { // largest bound whose trim fits
			mid := (lo + hi + 1) / 2
			if t := trim(c.Content, mid); fits(c, from, t, true, within, slack) {
				lo, best = mid, t
			} else {
				hi = mid - 1
			}
		}
		if best == "" {
			return false
		}
		items = append(items, packed{c: c, content: best, trimmed: best != c.Content, from: from})
		return true
	}
	// Retrieval comes before packing the recent turns: a superseded item
	// is dropped when its successor is anywhere in the context, recent or
	// retrieved, so both parts must be known first.
	var turns []timelines.Chunk
	if req.Session != "" && req.RecentTurns > 0 {
		if turns, err = e.src.Chunks.RecentTurns(req.Session, req.RecentTurns); err != nil {
			return nil, fmt.Errorf("assemble context: %w", err)
		}
		if req.AsOf != 0 { // the turns memory held then (of the last RecentTurns)
			kept := turns[:0]
			for _, c := range turns {
				if c.Seq <= req.AsOf {
					kept = append(kept, c)
				}
			}
			turns = kept
		}
		if err := e.checkChunks(turns); err != nil {
			return nil, fmt.Errorf("assemble context: %w", err)
		}
		if req.Exclude != nil {
			kept := turns[:0:0]
			for _, t := range turns {
				if !req.Exclude(t.Content) {
					kept = append(kept, t)
				}
			}
			turns = kept
		}
	}
	var cs []*cand
	var froms []string
	if p != nil {
		a.Temporal = p.temporal
		if cs, _, err = e.retrieve(ctx, p, p.k); err != nil {
			return nil, err
		}
		if err := e.checkCands(cs); err != nil {
			return nil, fmt.Errorf("assemble context: %w", err)
		}
		if cs, err = e.supersede(cs, p.req.IncludeSuperseded); err != nil {
			return nil, fmt.Errorf("assemble context: %w", err)
		}
	}
	if turns, cs, err = e.withoutSupersededContext(turns, cs); err != nil {
		return nil, fmt.Errorf("assemble context: %w", err)
	}
	if p != nil {
		froms = make([]string, len(cs))
		for i := range cs {
			froms[i] = e.ownerOf(cs[i].chunk.ID)
		}
		if req.Also != nil {
			if cs, froms, err = req.Also.mergeCands(ctx, req, budget, cs, froms); err != nil {
				return nil, err
			}
		}
		if req.Exclude != nil {
			n := 0
			for i := range cs {
				if !req.Exclude(cs[i].chunk.Content) {
					cs[n], froms[n] = cs[i], froms[i]
					n++
				}
			}
			cs, froms = cs[:n], froms[:n]
		}
	}
	if len(turns) > 0 {
		for i := len(turns) - 1; i >= 0; i-- {
			within := budget
			if i < len(turns)-1 && hasText {
				within = budget / 2
			}
			if !fit(turns[i], e.ownerOf(turns[i].ID), true, true, max(chunkTokens, tok.CountTokens(turns[i].Content)), within) {
				break
			}
			seen[turns[i].ID] = true
			a.Recent = append(a.Recent, turns[i].ID)
		}
		for i, j := 0, len(a.Recent)-1; i < j; i, j = i+1, j-1 {
			a.Recent[i], a.Recent[j] = a.Recent[j], a.Recent[i]
		}
	}
	if p != nil {
		// Chunks are tried in rank order, but in growing groups: a group
		// that fits as a whole, each member as fit would first try it
		// (whole among the first FullChunks, else cut to ChunkTokens),
		// is placed with one rendering instead of one per chunk. Every
		// member would have fitted in turn (the token count only grows
		// as content is added), so the result is the same as one by one.
		group := 4
		minFail := math.MaxInt // the shortest snippet that did not fit since the last placement
		for i := 0; i < len(cs); i++ {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("assemble context: %w", err)
			}
			c := cs[i]
			if seen[c.chunk.ID] {
				continue
			}
			if budget-base() < minSlack { // full: not even a turn header fits
				seen[c.chunk.ID] = true
				a.Dropped = append(a.Dropped, c.chunk.ID)
				continue
			}
			if group > 1 {
				var ps []packed
				var at []int
				sum := 0
				for j := i; j < len(cs) && len(ps) < group; j++ {
					cj := cs[j]
					if seen[cj.chunk.ID] {
						continue
					}
					content := cj.chunk.Content
					if j >= full || grow {
						content = trim(content, chunkTokens)
					}
					if content == "" {
						break
					}
					sum += tok.CountTokens(content)
					ps = append(ps, packed{c: cj.chunk, content: content, trimmed: content != cj.chunk.Content, from: froms[j]})
					at = append(at, j)
				}
				if len(ps) > 1 && sum <= budget-base() && cost(ps...) <= budget {
					items = append(items, ps...)
					for _, p := range ps {
						seen[p.c.ID] = true
						a.Included = append(a.Included, p.c.ID)
					}
					i = at[len(at)-1]
					group = min(2*group, 64)
					continue
				}
			}
			seen[c.chunk.ID] = true
			n := 0
			if grow {
				// A snippet at least as long as one that did not fit since
				// the last placement does not fit either (the output only
				// grew): dropped without a rendering. A chunk joining a
				// session already shown may be lost this way, never the
				// budget broken.
				if n = tok.CountTokens(trim(c.chunk.Content, chunkTokens)); n >= minFail {
					a.Dropped = append(a.Dropped, c.chunk.ID)
					continue
				}
			}
			if fit(c.chunk, froms[i], i < full && !grow, !grow, chunkTokens, budget) {
				a.Included = append(a.Included, c.chunk.ID)
				group, minFail = 2, math.MaxInt
			} else {
				a.Dropped = append(a.Dropped, c.chunk.ID)
				group = 1
				if grow {
					minFail = min(minFail, n)
				}
			}
		}
	}
	if grow && len(items) > 0 {
		// Breadth first, then depth: the ranked chunks went in as
		// snippets; the budget left grows them back in rank order, the
		// first FullChunks whole, the others to DefaultChunkTokens of key
		// sentences (whole when that short). All at once when they fit,
		// else one by one. The number of chunks placed depends on the
		// snippets alone, so a larger budget never holds fewer.
		rank := make(map[string]int, len(cs))
		for i := range cs {
			if _, ok := rank[cs[i].chunk.ID]; !ok {
				rank[cs[i].chunk.ID] = i
			}
		}
		up := make([]packed, len(items))
		n := 0
		for i, it := range items {
			up[i] = it
			rk, ok := rank[it.c.ID]
			if !it.trimmed || !ok {
				continue
			}
			t := it.c.Content
			if rk >= full {
				t = trim(t, DefaultChunkTokens)
			}
			if tok.CountTokens(t) > tok.CountTokens(it.content) {
				up[i].content, up[i].trimmed = t, t != it.c.Content
				n++
			}
		}
		if n > 0 && tok.CountTokens(string(r.render(up))) <= budget {
			items = up
		} else if n > 0 {
			order := make([]int, 0, n)
			for i := range items {
				if items[i].content != up[i].content {
					order = append(order, i)
				}
			}
			sort.SliceStable(order, func(x, y int) bool { return rank[items[order[x]].c.ID] < rank[items[order[y]].c.ID] })
			used := tok.CountTokens(string(r.render(items)))
			for _, i := range order {
				if budget-used < minSlack {
					break
				}
				// A growth whose text alone counts more than the tokens
				// left cannot fit: skipped without a rendering (with a
				// Tokenizer that is not additive this only loses a growth;
				// every one made is still checked on the whole output).
				if tok.CountTokens(up[i].content)-tok.CountTokens(items[i].content) > budget-used {
					continue
				}
				was := items[i]
				items[i] = up[i]
				if n := tok.CountTokens(string(r.render(items))); n > budget {
					items[i] = was
				} else {
					used = n
				}
			}
		}
	}
	for _, it := range items {
		if it.trimmed {
			a.Trimmed = append(a.Trimmed, it.c.ID)
		}
	}
	sort.Strings(a.Trimmed)
	a.Output = r.render(items)
	a.Tokens = tok.CountTokens(string(a.Output))
	if a.Tokens > budget { // cannot happen: every step checked the whole output
		return nil, fmt.Errorf("assemble context: %d tokens over budget %d: %w", a.Tokens, budget, ErrBadBudget)
	}
	return a, nil
}

// renderer renders packed chunks in one format.
type renderer struct {
	format Format
	active string
}

// from names whose memory g is ("" for own): the grantor of shared chunks.
func (r *renderer) from(g *group) string {
	if len(g.items) == 0 {
		return ""
	}
	return g.items[0].from
}

type group struct {
	kind  byte // 'n' note, 'd' document, 's' session
	key   string
	name  string
	first int64
	items []packed
}

func docKey(c *timelines.Chunk) string {
	if c.ChunkParent != "" {
		return c.ChunkParent
	}
	return c.ID
}

func (r *renderer) groups(items []packed) []*group {
	byKey := map[string]*group{}
	var gs []*group
	for _, it := range items {
		var kind byte
		var key string
		switch {
		case it.c.Kind == log.KindDocument:
			kind, key = 'd', docKey(&it.c)
		case it.c.Session != "":
			kind, key = 's', it.c.Session
		default:
			kind, key = 'n', it.c.ID
		}
		mk := string(kind) + key
		if it.from != "" { // sessions of one name from two owners stay apart
			mk = it.from + "\x00" + mk
		}
		g, ok := byKey[mk]
		if !ok {
			g = &group{kind: kind, key: key, first: it.c.Time}
			byKey[mk] = g
			gs = append(gs, g)
		}
		g.first = min(g.first, it.c.Time)
		g.items = append(g.items, it)
	}
	rankKind := func(g *group) int {
		switch {
		case g.kind == 'n':
			return 0
		case g.kind == 'd':
			return 1
		case g.key != r.active:
			return 2
		}
		return 3
	}
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		if ka, kb := rankKind(a), rankKind(b); ka != kb {
			return ka < kb
		}
		if a.first != b.first {
			return a.first < b.first
		}
		return a.key < b.key
	})
	for _, g := range gs {
		sort.SliceStable(g.items, func(i, j int) bool {
			a, b := &g.items[i].c, &g.items[j].c
			if g.kind == 'd' && a.ChunkIndex != b.ChunkIndex {
				return a.ChunkIndex < b.ChunkIndex
			}
			if a.Time != b.Time {
				return a.Time < b.Time
			}
			if a.Seq != b.Seq {
				return a.Seq < b.Seq
			}
			return a.ID < b.ID
		})
		if g.kind == 'd' {
			g.name = docName(g.items, g.key)
		}
	}
	return gs
}

func docName(items []packed, key string) string {
	for _, k := range []string{"name", "title"} {
		for _, it := range items {
			if v := strings.TrimSpace(it.c.Meta[k]); v != "" {
				return v
			}
		}
	}
	return key
}

func fmtTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
func fmtDate(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02") }

func (r *renderer) render(items []packed) []byte {
	gs := r.groups(items)
	switch r.format {
	case FormatJSON:
		return r.renderJSON(gs)
	case FormatText:
		return r.renderText(gs)
	}
	return r.renderXML(gs)
}

func (r *renderer) renderXML(gs []*group) []byte {
	var b bytes.Buffer
	b.WriteString("<unlimited_context>\n")
	for _, g := range gs {
		switch g.kind {
		case 'n':
			it := g.items[0]
			fmt.Fprintf(&b, `<note kind="%s" time="%s"%s%s>`, it.c.Kind, fmtTime(it.c.Time), trimAttr(it.trimmed), fromAttr(r.from(g)))
			xmlText(&b, it.content)
			b.WriteString("</note>\n")
		case 'd':
			trimmed := false
			for _, it := range g.items {
				trimmed = trimmed || it.trimmed
			}
			b.WriteString(`<document name="`)
			xmlText(&b, g.name)
			fmt.Fprintf(&b, `"%s%s>`, trimAttr(trimmed), fromAttr(r.from(g)))
			for i, it := range g.items {
				if i > 0 {
					b.WriteString("\n\n")
				}
				xmlText(&b, it.content)
			}
			b.WriteString("</document>\n")
		default:
			b.WriteString(`<session id="`)
			xmlText(&b, g.key)
			fmt.Fprintf(&b, `" date="%s"%s>`+"\n", fmtDate(g.first), fromAttr(r.from(g)))
			for _, it := range g.items {
				b.WriteString(`<turn role="`)
				xmlText(&b, it.c.Role)
				b.WriteString(`"`)
				if it.c.Kind != log.KindConversation {
					fmt.Fprintf(&b, ` kind="%s"`, it.c.Kind)
				}
				fmt.Fprintf(&b, ` time="%s"%s>`, fmtTime(it.c.Time), trimAttr(it.trimmed))
				xmlText(&b, it.content)
				b.WriteString("</turn>\n")
			}
			b.WriteString("</session>\n")
		}
	}
	b.WriteString("</unlimited_context>\n")
	return b.Bytes()
}

// fromAttr names the grantor of shared memory (addresses are base64url:
// nothing to escape).
func fromAttr(from string) string {
	if from == "" {
		return ""
	}
	return ` from="` + from + `"`
}

// fromText is fromAttr for the text format.
func fromText(from string) string {
	if from == "" {
		return ""
	}
	return " (shared by " + from + ")"
}

func trimAttr(t bool) string {
	if t {
		return ` trimmed="true"`
	}
	return ""
}

// xmlText writes s escaped for both text and attribute values; invalid
// UTF-8 and characters XML 1.0 forbids become U+FFFD.
func xmlText(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == utf8.RuneError && n == 1,
			r < 0x20 && r != '\t' && r != '\n' && r != '\r',
			r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
}

type jsonTurn struct {
	ID      string `json:"id"`
	Role    string `json:"role,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Time    string `json:"time"`
	Content string `json:"content"`
	Trimmed bool   `json:"trimmed,omitempty"`
	From    string `json:"from,omitempty"` // grantor of a shared chunk
}

type jsonContext struct {
	Notes []jsonTurn `json:"notes,omitempty"`
	Docs  []struct {
		Name  string     `json:"name"`
		Parts []jsonTurn `json:"parts"`
	} `json:"documents,omitempty"`
	Sessions []struct {
		ID    string     `json:"id"`
		Date  string     `json:"date"`
		Turns []jsonTurn `json:"turns"`
	} `json:"sessions,omitempty"`
}

func jturn(it packed) jsonTurn {
	t := jsonTurn{ID: it.c.ID, Role: it.c.Role, Time: fmtTime(it.c.Time), Content: strings.ToValidUTF8(it.content, "\uFFFD"), Trimmed: it.trimmed}
	if it.c.Kind != log.KindConversation {
		t.Kind = it.c.Kind.String()
	}
	return t
}

func (r *renderer) renderJSON(gs []*group) []byte {
	var out jsonContext
	for _, g := range gs {
		var ts []jsonTurn
		for _, it := range g.items {
			t := jturn(it)
			t.From = it.from
			ts = append(ts, t)
		}
		switch g.kind {
		case 'n':
			out.Notes = append(out.Notes, ts...)
		case 'd':
			out.Docs = append(out.Docs, struct {
				Name  string     `json:"name"`
				Parts []jsonTurn `json:"parts"`
			}{g.name, ts})
		default:
			out.Sessions = append(out.Sessions, struct {
				ID    string     `json:"id"`
				Date  string     `json:"date"`
				Turns []jsonTurn `json:"turns"`
			}{g.key, fmtDate(g.first), ts})
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return []byte("{}\n") // unreachable: only strings and bools
	}
	return b.Bytes()
}

func (r *renderer) renderText(gs []*group) []byte {
	var b bytes.Buffer
	for i, g := range gs {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch g.kind {
		case 'n':
			it := g.items[0]
			fmt.Fprintf(&b, "# Note (%s, %s)%s%s\n%s\n", it.c.Kind, fmtTime(it.c.Time), fromText(r.from(g)), trimText(it.trimmed), oneBlock(it.content))
		case 'd':
			fmt.Fprintf(&b, "# Document %s%s\n", oneLine(g.name), fromText(r.from(g)))
			for j, it := range g.items {
				if j > 0 {
					b.WriteByte('\n')
				}
				fmt.Fprintf(&b, "%s%s\n", oneBlock(it.content), trimText(it.trimmed))
			}
		default:
			fmt.Fprintf(&b, "# Session %s (%s)%s\n", oneLine(g.key), fmtDate(g.first), fromText(r.from(g)))
			for _, it := range g.items {
				role := it.c.Role
				if it.c.Kind != log.KindConversation {
					role += " (" + it.c.Kind.String() + ")"
				}
				fmt.Fprintf(&b, "[%s] %s: %s%s\n", fmtTime(it.c.Time), oneLine(role), oneBlock(it.content), trimText(it.trimmed))
			}
		}
	}
	return b.Bytes()
}

func trimText(t bool) string {
	if t {
		return " […]"
	}
	return ""
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
}

// oneBlock keeps line breaks but drops blank lines, so a chunk cannot fake
// a header line of the text format.
func oneBlock(s string) string {
	var out []string
	for _, ln := range strings.Split(strings.ToValidUTF8(s, "\uFFFD"), "\n") {
		ln = strings.TrimRight(ln, " \t\r")
		if strings.TrimSpace(ln) == "" {
			continue
		}
		if strings.HasPrefix(ln, "# ") {
			ln = " " + ln
		}
		out = append(out, ln)
	}
	return strings.Join(out, "\n")
}

// mergeCands adds e's ranked chunks for req to cs (another engine's, with
// froms), ordered by final score, then origin (own first), then chunk id.
func (e *Engine) mergeCands(ctx context.Context, req ContextRequest, budget int, cs []*cand, froms []string) ([]*cand, []string, error) {
	sr := req.Request
	sr.Origin = OriginAny // e serves its own origin
	if sr.K == 0 {
		sr.K = ContextK(budget)
	}
	p, err := e.plan(sr)
	if err != nil {
		return nil, nil, err
	}
	cs2, _, err := e.retrieve(ctx, p, p.k)
	if err != nil {
		return nil, nil, err
	}
	if err := e.checkCands(cs2); err != nil {
		return nil, nil, fmt.Errorf("assemble context: %w", err)
	}
	type item struct {
		c    *cand
		from string
	}
	all := make([]item, 0, len(cs)+len(cs2))
	for i := range cs {
		all = append(all, item{cs[i], froms[i]})
	}
	for i := range cs2 {
		all = append(all, item{cs2[i], e.ownerOf(cs2[i].chunk.ID)})
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.c.ex.Final != b.c.ex.Final {
			return a.c.ex.Final > b.c.ex.Final
		}
		if a.from != b.from {
			return a.from < b.from
		}
		return a.c.chunk.ID < b.c.chunk.ID
	})
	cs, froms = cs[:0:0], froms[:0:0]
	for _, it := range all {
		cs, froms = append(cs, it.c), append(froms, it.from)
	}
	return cs, froms, nil
}

// snippetTerms are the words of a query a snippet looks for: its content
// words, each cut to its first snippetStem letters so a plural or a tense
// still matches ("paintings" and "painted" meet at "paint").
func snippetTerms(q string) map[string]bool {
	m := map[string]bool{}
	for _, w := range textutil.ContentWords(q) {
		m[snippetStem(w)] = true
	}
	return m
}

// snippetStemLen bounds the letters of a word a snippet compares.
const snippetStemLen = 5

func snippetStem(w string) string {
	n := 0
	for i := range w {
		if n == snippetStemLen {
			return w[:i]
		}
		n++
	}
	return w
}

// snippet is the part of content a lower-ranked chunk brings to a context
// within limit tokens: content itself when it fits; else the sentence that
// holds the most query terms (the first of equals), then its neighbours,
// the next before the previous, while they fit, in their original order.
// When the best sentence alone does not fit, the words around its first
// query term that fit. "" when no sentence holds a query term (the caller
// then keeps the key sentences instead).
func snippet(content string, terms map[string]bool, limit int) string {
	if limit <= 0 {
		return ""
	}
	if textutil.EstimateTokens(content) <= limit {
		return content
	}
	if len(terms) == 0 {
		return ""
	}
	sents := textutil.Sentences(content)
	best, bestN := -1, 0
	for i, s := range sents {
		n, seen := 0, map[string]bool{}
		for _, w := range textutil.ContentWords(s) {
			if st := snippetStem(w); terms[st] && !seen[st] {
				seen[st] = true
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return ""
	}
	lo, hi := best, best
	join := func(lo, hi int) string { return strings.Join(sents[lo:hi+1], " ") }
	if textutil.EstimateTokens(join(lo, hi)) > limit {
		return window(sents[best], terms, limit)
	}
	for {
		grew := false
		if hi+1 < len(sents) && textutil.EstimateTokens(join(lo, hi+1)) <= limit {
			hi++
			grew = true
		}
		if lo > 0 && textutil.EstimateTokens(join(lo-1, hi)) <= limit {
			lo--
			grew = true
		}
		if !grew {
			return join(lo, hi)
		}
	}
}

// window is the longest run of sentence's words that starts at most
// windowLead words before its first query term and fits limit tokens with
// an ellipsis at each cut end; "" when not even that term fits.
func window(sentence string, terms map[string]bool, limit int) string {
	fs := strings.Fields(sentence)
	at := -1
	for i, f := range fs {
		for _, w := range textutil.Words(f) {
			if terms[snippetStem(w)] {
				at = i
				break
			}
		}
		if at >= 0 {
			break
		}
	}
	if at < 0 {
		return ""
	}
	lo := max(at-windowLead, 0)
	text := func(hi int) string {
		t := strings.Join(fs[lo:hi], " ")
		if lo > 0 {
			t = "… " + t
		}
		if hi < len(fs) {
			t += " …"
		}
		return t
	}
	hi := at + 1
	if textutil.EstimateTokens(text(hi)) > limit {
		return ""
	}
	for hi < len(fs) && textutil.EstimateTokens(text(hi+1)) <= limit {
		hi++
	}
	return text(hi)
}

// windowLead is how many words before the first query term a window keeps
// (the subject of a clause usually comes first).
const windowLead = 3
