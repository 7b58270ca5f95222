package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/consolidate"
)

// Derived memory (issue 30): uc_profile reads the profiles consolidation
// wrote, uc_consolidate runs it with the store owner's model.

// factCost is about what a fact takes in a result, text and structured
// content together (a fact is small, so both are counted).
func factCost(f Fact) int {
	n := itemOverhead + 2*(len(f.Text)+len(f.Subject)+len(f.Reason)+len(f.DuplicateOf))
	for _, id := range f.Sources {
		n += 2 * (len(id) + 4)
	}
	for _, id := range f.Supersedes {
		n += 2 * (len(id) + 4)
	}
	return n
}

func renderFact(b *strings.Builder, f Fact) {
	b.WriteString("- ")
	if f.Subject != "" {
		fmt.Fprintf(b, "[%s] ", f.Subject)
	}
	b.WriteString(f.Text)
	var refs []string
	if f.ID != "" {
		refs = append(refs, "fact "+f.ID)
	}
	if len(f.Sources) > 0 {
		refs = append(refs, "sources "+strings.Join(f.Sources, ", "))
	}
	if len(f.Supersedes) > 0 {
		refs = append(refs, "supersedes "+strings.Join(f.Supersedes, ", "))
	}
	if f.DuplicateOf != "" {
		refs = append(refs, "already "+f.DuplicateOf)
	}
	if f.Reason != "" {
		refs = append(refs, "refused: "+f.Reason)
	}
	if len(refs) > 0 {
		fmt.Fprintf(b, " [%s]", strings.Join(refs, "; "))
	}
	b.WriteString("\n")
}

// ---- uc_profile

func (s *server) toolProfile(ctx context.Context, _ *mcp.CallToolRequest, in ProfileIn) (*mcp.CallToolResult, ProfileOut, error) {
	out := ProfileOut{Profiles: []SubjectProfile{}}
	res, err := s.eng.Profile(ctx, ucl.ProfileRequest{Subject: in.Subject})
	if err != nil {
		return nil, out, engineErr("profile", err)
	}
	var b strings.Builder
	if len(res.Profiles) == 0 {
		if in.Subject != "" {
			fmt.Fprintf(&b, "no profile for subject %q yet.\n", snippet(in.Subject, maxEcho))
		} else {
			b.WriteString("no profile yet: uc_consolidate derives facts and profiles from stored turns.\n")
		}
		return textResult(b.String()), out, nil
	}
	out = profileOut(res)
	for _, p := range out.Profiles {
		fmt.Fprintf(&b, "## %s (profile %s, %d fact(s))\n", p.Subject, p.ID, len(p.Facts)+p.MoreFacts)
		for _, f := range p.Facts {
			renderFact(&b, f)
		}
		if p.MoreFacts > 0 {
			fmt.Fprintf(&b, "[%d more fact(s); read the whole profile: uc_get {\"ids\":[%q]}]\n", p.MoreFacts, p.ID)
		}
		b.WriteString("\n")
	}
	if len(out.MoreSubjects) > 0 {
		fmt.Fprintf(&b, "[%d more subject(s), each read with uc_profile {\"subject\":…}: %s", out.MoreCount, quoteList(out.MoreSubjects))
		if out.MoreCount > len(out.MoreSubjects) {
			b.WriteString(", …")
		}
		b.WriteString("]\n")
	}
	b.WriteString("Facts are consolidated from the source items named; uc_get reads them.\n")
	return textResult(b.String()), out, nil
}

// maxMoreSubjects bounds the subjects a cut uc_profile result names.
const maxMoreSubjects = 50

// profileOut is the profiles cut to the items budget: the first
// profile's first fact always, then whole facts while they fit; the
// subjects that do not fit at all are counted, the first
// maxMoreSubjects named.
func profileOut(res *ucl.ProfileResult) ProfileOut {
	out := ProfileOut{Profiles: []SubjectProfile{}}
	left := itemsBudget
	for i, p := range res.Profiles {
		if i > 0 && left < itemOverhead+minContent {
			out.MoreCount = len(res.Profiles) - i
			for _, q := range res.Profiles[i:min(len(res.Profiles), i+maxMoreSubjects)] {
				out.MoreSubjects = append(out.MoreSubjects, q.Subject)
			}
			break
		}
		sp := SubjectProfile{ID: p.ID, Subject: p.Subject, Facts: []Fact{}}
		left -= itemOverhead + 2*len(p.Subject)
		for j, f := range p.Facts {
			fact := Fact{ID: f.ID, Text: f.Text, Sources: nonNil(f.Sources)}
			if c := factCost(fact); (i > 0 || j > 0) && c > left {
				sp.MoreFacts = len(p.Facts) - j
				break
			} else {
				left -= c
			}
			sp.Facts = append(sp.Facts, fact)
		}
		out.Profiles = append(out.Profiles, sp)
	}
	return out
}

// ---- uc_consolidate

func (s *server) toolConsolidate(ctx context.Context, _ *mcp.CallToolRequest, in ConsolidateIn) (*mcp.CallToolResult, ConsolidateOut, error) {
	var out ConsolidateOut
	since, _, err := checkSpan("since", in.Since, "until", "")
	if err != nil {
		return nil, out, err
	}
	if in.Session != "" {
		if err := s.checkSession(ctx, "session", in.Session); err != nil {
			return nil, out, err
		}
	}
	res, err := s.eng.Consolidate(ctx, ucl.ConsolidateRequest{Session: in.Session, Since: since})
	if errors.Is(err, consolidate.ErrNoModel) {
		// The engine's message, once (it wraps the sentinel with the same
		// prefix), and what to do.
		return nil, out, fmt.Errorf("%w: nothing was sent or stored (the store's owner sets [consolidate] model and endpoint in ucl.toml)", consolidate.ErrNoModel)
	}
	if res == nil {
		return nil, out, engineErr("consolidate", err)
	}
	out = consolidateOut(res)
	text := renderConsolidate(out)
	if err != nil {
		if out.StoredCount == 0 && len(out.Profiles) == 0 {
			return nil, out, engineErr("consolidate", err)
		}
		// Earlier requests of the run stored their facts: say what was
		// stored, and that the run stopped.
		r := textResult(text + fmt.Sprintf("The run stopped: %v\n", err))
		r.IsError = true
		return r, out, nil
	}
	return textResult(text), out, nil
}

// consolidateOut is the run's report cut to the items budget: stored
// facts first, then refused, then duplicates.
func consolidateOut(res *ucl.ConsolidateResult) ConsolidateOut {
	out := ConsolidateOut{Model: res.Model, Requests: len(res.Calls), StoredCount: len(res.Stored),
		RefusedCount: len(res.Refused), DuplicateCount: len(res.Duplicates), Stored: []Fact{}, Refused: []Fact{},
		Duplicates: []Fact{}, Profiles: []string{}, Pending: res.Pending}
	for _, c := range res.Calls {
		out.Turns += c.Turns
	}
	left := itemsBudget
	for _, p := range res.Profiles {
		out.Profiles = append(out.Profiles, p.Subject)
		left -= 2 * len(p.Subject)
	}
	sort.Strings(out.Profiles)
	add := func(dst *[]Fact, fs []ucl.DerivedFact) {
		for _, d := range fs {
			f := Fact{ID: d.ID, Subject: d.Subject, Text: d.Text, Sources: nonNil(d.Sources), Supersedes: d.Supersedes,
				Reason: d.Reason, DuplicateOf: d.DuplicateOf}
			if c := factCost(f); c > left {
				out.Omitted++
				continue
			} else {
				left -= c
			}
			*dst = append(*dst, f)
		}
	}
	add(&out.Stored, res.Stored)
	add(&out.Refused, res.Refused)
	add(&out.Duplicates, res.Duplicates)
	return out
}

func renderConsolidate(out ConsolidateOut) string {
	var b strings.Builder
	if out.Requests == 0 {
		b.WriteString("nothing to consolidate: every turn was consolidated already.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "%d turn(s) in %d request(s) to %s: stored %d fact(s), refused %d, %d duplicate(s); profiles rewritten: %s.\n",
		out.Turns, out.Requests, out.Model, out.StoredCount, out.RefusedCount, out.DuplicateCount, orNone(out.Profiles))
	for _, sec := range []struct {
		name  string
		facts []Fact
	}{{"stored", out.Stored}, {"refused (not stored)", out.Refused}, {"duplicates (not stored)", out.Duplicates}} {
		if len(sec.facts) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n", sec.name)
		for _, f := range sec.facts {
			renderFact(&b, f)
		}
	}
	if out.Omitted > 0 {
		fmt.Fprintf(&b, "\n[%d fact(s) not listed to bound the result; uc_profile shows what is stored]\n", out.Omitted)
	}
	if out.Pending {
		b.WriteString("\nMore turns are pending: call uc_consolidate again.\n")
	}
	return b.String()
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
