package ucl

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/consolidate"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// Derived memory (package consolidate): Consolidate asks a model for the
// facts of the turns not yet consolidated and appends the grounded ones;
// Tombstone carries a forgotten source on to what was derived from it.

// ConsolidateOptions configure the model Consolidate asks (Options).
type ConsolidateOptions struct {
	// Endpoint is the OpenAI-compatible base URL with its /v1.
	Endpoint string
	// Model is the model name; empty: consolidation is off.
	Model string
	// APIKey is sent as a bearer token; never stored, logged or returned.
	APIKey string
	// Timeout bounds one request (0: consolidate.DefaultTimeout).
	Timeout time.Duration
	// HTTP is the client (nil: a default one).
	HTTP *http.Client
}

// Bounds of one Consolidate run.
const (
	// DefaultConsolidateTurns is how many turns one model request carries.
	DefaultConsolidateTurns = 40
	// DefaultConsolidateRequests is how many requests one run sends at most.
	DefaultConsolidateRequests = 25
	// consolidateKnown bounds the stored facts sent along (the newest).
	consolidateKnown = 200
	// consolidateState is the local record of turns offered that left no
	// item in the log (a request whose facts were all refused or
	// duplicates), so a re-run does not send them again.
	consolidateState = "consolidate.json"
)

// ConsolidateRequest asks for one consolidation run.
type ConsolidateRequest struct {
	// Session limits the run to one session's turns ("" all sessions).
	Session string `json:"session,omitempty"`
	// Since skips turns whose content time is before it.
	Since string `json:"since,omitempty"`
	// Model and Endpoint override the store's options for this run (the
	// API key stays the owner's).
	Model    string `json:"model,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// Turns per request (0: DefaultConsolidateTurns) and requests per run
	// (0: DefaultConsolidateRequests).
	Turns    int      `json:"turns,omitempty"`
	Requests int      `json:"requests,omitempty"`
	Progress Progress `json:"-"`
}

// DerivedFact is one fact of a run's report.
type DerivedFact struct {
	ID         string   `json:"id,omitempty"`
	Seq        uint64   `json:"seq,omitempty"`
	Subject    string   `json:"subject"`
	Text       string   `json:"text"`
	Sources    []string `json:"derived_from"`
	Supersedes []string `json:"supersedes,omitempty"`
	// Reason says why a fact was refused; DuplicateOf names the stored
	// fact a duplicate repeats.
	Reason      string   `json:"reason,omitempty"`
	Missing     []string `json:"missing,omitempty"`
	DuplicateOf string   `json:"duplicate_of,omitempty"`
}

// DerivedProfile is a profile a run (or a tombstone) wrote.
type DerivedProfile struct {
	ID      string   `json:"id"`
	Seq     uint64   `json:"seq"`
	Subject string   `json:"subject"`
	Facts   []string `json:"derived_from"`
}

// ConsolidateCall is one model request of a run.
type ConsolidateCall struct {
	RequestHash string `json:"request_hash,omitempty"`
	Turns       int    `json:"turns"`
	Through     uint64 `json:"through_seq"`
	Facts       int    `json:"facts"`
	Error       string `json:"error,omitempty"`
}

// ConsolidateResult reports a run: what was stored, refused and skipped.
type ConsolidateResult struct {
	Model         string            `json:"model"`
	PromptVersion string            `json:"prompt_version"`
	Calls         []ConsolidateCall `json:"requests"`
	Stored        []DerivedFact     `json:"stored"`
	Refused       []DerivedFact     `json:"refused"`
	Duplicates    []DerivedFact     `json:"duplicates"`
	Profiles      []DerivedProfile  `json:"profiles"`
	// Pending is true when turns were left for another run (the request
	// bound was reached).
	Pending bool `json:"pending,omitempty"`
}

func (s *Store) consolidateConfig(req ConsolidateRequest) consolidate.Config {
	o := s.opts.Consolidate
	c := consolidate.Config{Endpoint: o.Endpoint, Model: o.Model, APIKey: o.APIKey, Timeout: o.Timeout, HTTP: o.HTTP}
	if req.Model != "" {
		c.Model = req.Model
	}
	if req.Endpoint != "" {
		c.Endpoint = req.Endpoint
	}
	return c
}

// Consolidate sends the turns not yet consolidated (user and assistant
// turns of kind conversation, outside the derived session, in seq order)
// to the model in requests of req.Turns, and appends, per request in one
// batch, the facts that pass the checks (their sources were sent and are
// still live, consolidate.Check supports them, what they supersede is a
// live fact, they duplicate no live fact) and the profile of every subject
// they change. A request that fails (unreachable, status, timeout,
// malformed or partial output) stores nothing and ends the run with its
// error; the result lists what earlier requests stored. Without a model
// it returns consolidate.ErrNoModel and sends nothing.
func (s *Store) Consolidate(ctx context.Context, req ConsolidateRequest) (*ConsolidateResult, error) {
	cfg := s.consolidateConfig(req)
	if strings.TrimSpace(cfg.Model) == "" || strings.TrimSpace(cfg.Endpoint) == "" {
		return nil, fmt.Errorf("consolidate: %w", consolidate.ErrNoModel)
	}
	since, err := parseTime("since", req.Since)
	if err != nil {
		return nil, err
	}
	if req.Turns < 0 || req.Requests < 0 {
		return nil, badRequest("consolidate: negative bound")
	}
	if req.Turns == 0 {
		req.Turns = DefaultConsolidateTurns
	}
	if req.Requests == 0 {
		req.Requests = DefaultConsolidateRequests
	}
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	s.consolidateMu.Lock()
	defer s.consolidateMu.Unlock()
	res := &ConsolidateResult{Model: cfg.Model, PromptVersion: consolidate.PromptVersion,
		Calls: []ConsolidateCall{}, Stored: []DerivedFact{}, Refused: []DerivedFact{}, Duplicates: []DerivedFact{}, Profiles: []DerivedProfile{}}
	state, err := s.readConsolidateState()
	if err != nil {
		return nil, err
	}
	for n := 0; ; n++ {
		var in consolidate.Input
		var through uint64
		sent := map[string]timelines.Chunk{}
		err := s.readProj(ctx, nil, func(set *projstd.Set, _ bool) error {
			var err error
			in, through, sent, err = pendingTurns(ctx, s.st.Log, set, state, req.Session, since, req.Turns)
			return err
		})
		if err != nil {
			return res, err
		}
		if len(in.Turns) == 0 {
			return res, nil
		}
		if n == req.Requests {
			res.Pending = true
			return res, nil
		}
		if req.Progress != nil {
			req.Progress("consolidate", uint64(n), uint64(req.Requests))
		}
		call := ConsolidateCall{Turns: len(in.Turns), Through: through}
		out, err := cfg.Extract(ctx, in)
		if err != nil {
			call.Error = err.Error()
			res.Calls = append(res.Calls, call)
			return res, fmt.Errorf("consolidate turns through seq %d: %w", through, err)
		}
		call.RequestHash, call.Facts = out.RequestHash, len(out.Output.Facts)
		res.Calls = append(res.Calls, call)
		wrote, err := s.commitFacts(ctx, req.Session, through, out, in, sent, res)
		if err != nil {
			return res, err
		}
		if !wrote {
			// Nothing of it reached the log: remember locally that these
			// turns were offered.
			state.mark(req.Session, through)
			if err := s.writeConsolidateState(state); err != nil {
				return res, err
			}
		}
	}
}

// consolidateMark is the local record of offered turns (consolidateState).
type consolidateMark struct {
	Version  int               `json:"version"`
	Through  uint64            `json:"through,omitempty"`
	Sessions map[string]uint64 `json:"sessions,omitempty"`
}

func (m *consolidateMark) mark(session string, through uint64) {
	if session == "" {
		m.Through = max(m.Through, through)
		return
	}
	if m.Sessions == nil {
		m.Sessions = map[string]uint64{}
	}
	m.Sessions[session] = max(m.Sessions[session], through)
}

func (s *Store) readConsolidateState() (*consolidateMark, error) {
	b, err := os.ReadFile(s.st.Path(consolidateState))
	if errors.Is(err, os.ErrNotExist) {
		return &consolidateMark{Version: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read consolidation state: %w", err)
	}
	var m consolidateMark
	if err := json.Unmarshal(b, &m); err != nil || m.Version != 1 {
		// Derived bookkeeping: a damaged file only means turns are
		// offered again (duplicates are skipped).
		return &consolidateMark{Version: 1}, nil
	}
	return &m, nil
}

func (s *Store) writeConsolidateState(m *consolidateMark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(s.st.Path(consolidateState), b, 0o600); err != nil {
		return fmt.Errorf("write consolidation state: %w", err)
	}
	return nil
}

// derivedChunks returns the live chunks of the derived session that are
// derived items, with what supersedes each.
func derivedChunks(set *projstd.Set) ([]timelines.Chunk, []consolidate.Item, error) {
	_, cs, err := set.Timelines.Session(consolidate.Session)
	if errors.Is(err, timelines.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var keep []timelines.Chunk
	var ptrs []*timelines.Chunk
	for _, c := range cs {
		if consolidate.IsDerived(c.Kind.String(), c.Meta) {
			keep = append(keep, c)
		}
	}
	for i := range keep {
		ptrs = append(ptrs, &keep[i])
	}
	sup, err := set.Timelines.SupersededByEach(ptrs)
	if err != nil {
		return nil, nil, err
	}
	items := make([]consolidate.Item, len(keep))
	for i, c := range keep {
		items[i] = consolidate.Item{ID: c.ID, Kind: c.Kind.String(), Subject: c.Meta[consolidate.MetaSubject], Content: c.Content,
			Sources: consolidate.SplitIDs(c.Meta[consolidate.MetaDerivedFrom]), Dropped: consolidate.SplitIDs(c.Meta[consolidate.MetaDropped]),
			Seq: c.Seq}
		if i < len(sup) {
			items[i].SupersededBy = sup[i]
		}
	}
	return keep, items, nil
}

// pendingTurns picks the first n turns (by seq) not yet consolidated: past
// the watermark of the log (the newest consolidated_through of a live
// derived item of the same scope, or of a run over every session) and of
// the local state, live, in the version the event put in place.
func pendingTurns(ctx context.Context, l *log.Log, set *projstd.Set, state *consolidateMark, scope string, since int64, n int) (consolidate.Input, uint64, map[string]timelines.Chunk, error) {
	in := consolidate.Input{Turns: []consolidate.Turn{}, Known: []consolidate.Known{}}
	chunks, items, err := derivedChunks(set)
	if err != nil {
		return in, 0, nil, err
	}
	global, per := state.Through, map[string]uint64{}
	for k, v := range state.Sessions {
		per[k] = v
	}
	for _, c := range chunks {
		t, err := strconv.ParseUint(c.Meta[consolidate.MetaThrough], 10, 64)
		if err != nil {
			continue
		}
		if sc := c.Meta[consolidate.MetaScope]; sc == "" {
			global = max(global, t)
		} else {
			per[sc] = max(per[sc], t)
		}
	}
	// Only the events after the lowest watermark that applies are read:
	// a run costs what was appended since the last one, not the store.
	from := global
	if scope != "" {
		from = max(global, per[scope])
	}
	var picked []timelines.Chunk
	errEnough := errors.New("enough turns")
	err = l.Events(ctx, from+1, 0, func(ev *log.Event) error {
		st := ev.Chunk()
		if st == nil || ev.IsShredded() || st.Session == consolidate.Session || (scope != "" && st.Session != scope) ||
			st.Kind != log.KindConversation || (st.Role != "user" && st.Role != "assistant") ||
			ev.Seq <= max(global, per[st.Session]) || st.Time < since {
			return nil
		}
		id := st.ChunkID
		if id == "" {
			id = ev.ID.String()
		}
		if strings.Contains(id, ",") {
			return nil // cannot be cited (derived_from is comma-separated)
		}
		// Live, and this event is its current version.
		c, ok, err := set.Timelines.Chunk(id)
		if err != nil {
			return err
		}
		if !ok || c.Seq != ev.Seq || strings.TrimSpace(c.Content) == "" {
			return nil
		}
		picked = append(picked, c)
		if len(picked) == n {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return in, 0, nil, fmt.Errorf("read pending turns: %w", err)
	}
	sent := map[string]timelines.Chunk{}
	var through uint64
	for _, c := range picked {
		in.Turns = append(in.Turns, consolidate.Turn{ID: c.ID, Session: c.Session, Role: c.Role, Time: log.FormatTime(c.Time), Content: c.Content})
		sent[c.ID] = c
		through = max(through, c.Seq)
	}
	// The current facts, newest consolidateKnown, oldest first.
	subjects := map[string]bool{}
	seqOf := map[string]uint64{}
	for _, it := range items {
		if it.Kind == consolidate.KindKnowledge {
			subjects[it.Subject] = true
			seqOf[it.ID] = it.Seq
		}
	}
	var known []consolidate.Known
	for _, subj := range sortedKeys(subjects) {
		for _, f := range consolidate.CurrentFacts(items, subj, nil) {
			known = append(known, consolidate.Known{ID: f.ID, Subject: subj, Text: f.Text})
		}
	}
	sort.SliceStable(known, func(i, j int) bool { return seqOf[known[i].ID] < seqOf[known[j].ID] })
	if len(known) > consolidateKnown {
		known = known[len(known)-consolidateKnown:]
	}
	if known != nil {
		in.Known = known
	}
	return in, through, sent, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newID() log.ID {
	var id log.ID
	rand.Read(id[:]) // crypto/rand never fails (Go 1.24)
	return id
}

// commitFacts checks one answer's facts and appends the good ones and the
// profiles they change as one batch. It reports whether anything was
// written.
func (s *Store) commitFacts(ctx context.Context, scope string, through uint64, call *consolidate.Call, in consolidate.Input, sent map[string]timelines.Chunk, res *ConsolidateResult) (bool, error) {
	known := map[string]bool{}
	for _, k := range in.Known {
		known[k.ID] = true
	}
	meta := func(f consolidate.Fact) map[string]string {
		return map[string]string{
			consolidate.MetaDerivedFrom: consolidate.JoinIDs(f.Sources), consolidate.MetaSubject: f.Subject,
			consolidate.MetaModel: call.Model, consolidate.MetaPromptVersion: consolidate.PromptVersion,
			consolidate.MetaRequestHash: call.RequestHash, consolidate.MetaThrough: strconv.FormatUint(through, 10),
			consolidate.MetaScope: scope,
		}
	}
	var entries []log.Entry
	var facts []DerivedFact
	for _, f := range call.Output.Facts {
		df := DerivedFact{Subject: f.Subject, Text: f.Text, Sources: f.Sources, Supersedes: f.Supersedes}
		var texts []string
		var latest int64
		for _, id := range f.Sources {
			c, ok := sent[id]
			if !ok {
				df.Reason = fmt.Sprintf("cites %q, which is not one of the turns sent", id)
				break
			}
			texts = append(texts, c.Content)
			latest = max(latest, c.Time)
		}
		for _, id := range f.Supersedes {
			if df.Reason == "" && !known[id] {
				df.Reason = fmt.Sprintf("supersedes %q, which is not a current fact", id)
			}
		}
		if df.Reason == "" {
			if sup := consolidate.Check(f.Text, texts); !sup.OK {
				df.Reason, df.Missing = "not supported by its sources: "+sup.Reason, sup.Missing
			}
		}
		if df.Reason != "" {
			res.Refused = append(res.Refused, df)
			continue
		}
		id := newID()
		df.ID = id.String()
		entries = append(entries, log.Entry{ID: id, Body: &log.Store{Kind: log.KindKnowledge, Session: consolidate.Session,
			Role: consolidate.Role, Content: f.Text, Meta: meta(f), Time: latest, Supersedes: f.Supersedes}})
		facts = append(facts, df)
	}
	if len(entries) == 0 {
		return false, nil
	}
	s.dedupMu.Lock()
	defer s.dedupMu.Unlock()
	plan, err := s.planDuplicates(ctx, entries, nil)
	if err != nil {
		return false, err
	}
	var kept []log.Entry
	var keptFacts []DerivedFact
	for i, e := range entries {
		if d := plan.dup[i]; d != nil {
			df := facts[i]
			df.ID = ""
			if d.item != nil {
				df.DuplicateOf = d.item.ChunkID
			} else {
				df.DuplicateOf = facts[d.entry].ID
			}
			res.Duplicates = append(res.Duplicates, df)
			continue
		}
		kept, keptFacts = append(kept, e), append(keptFacts, facts[i])
	}
	if len(kept) == 0 {
		return false, nil
	}
	// From here to the append no tombstone may run (it holds projMu too):
	// a source checked live stays live until the facts are in the log.
	s.lockProj()
	defer s.projMu.Unlock()
	set, err := s.caughtUpLocked(ctx, nil)
	if err != nil {
		return false, err
	}
	_, items, err := derivedChunks(set)
	if err != nil {
		return false, err
	}
	live := map[string]bool{}
	for _, it := range items {
		live[it.ID] = true
	}
	var final []log.Entry
	subjects := map[string]bool{}
	for i, e := range kept {
		st := e.Body.(*log.Store)
		df := keptFacts[i]
		for _, id := range df.Sources {
			if ok, err := set.Timelines.Contains(id); err != nil {
				return false, err
			} else if !ok && df.Reason == "" {
				df.Reason = fmt.Sprintf("its source %q was forgotten meanwhile", id)
			}
		}
		for _, id := range st.Supersedes {
			if !live[id] && df.Reason == "" {
				df.Reason = fmt.Sprintf("the fact it supersedes, %q, was forgotten meanwhile", id)
			}
		}
		if df.Reason != "" {
			df.ID = ""
			res.Refused = append(res.Refused, df)
			continue
		}
		final = append(final, e)
		items = append(items, consolidate.Item{ID: df.ID, Kind: consolidate.KindKnowledge, Subject: df.Subject, Content: df.Text,
			Sources: df.Sources, Seq: ^uint64(0) - uint64(len(kept)-i)})
		subjects[df.Subject] = true
		for _, id := range st.Supersedes {
			for j := range items {
				if items[j].ID == id {
					items[j].SupersededBy = append(items[j].SupersededBy, df.ID)
					subjects[items[j].Subject] = true
				}
			}
		}
		keptFacts[i] = df
	}
	if len(final) == 0 {
		return false, nil
	}
	profiles, profEntries := renderProfiles(items, sortedKeys(subjects), nil, map[string]string{
		consolidate.MetaModel: call.Model, consolidate.MetaPromptVersion: consolidate.PromptVersion,
		consolidate.MetaRequestHash: call.RequestHash, consolidate.MetaThrough: strconv.FormatUint(through, 10),
		consolidate.MetaScope: scope,
	})
	final = append(final, profEntries...)
	rs, err := s.st.Log.AppendBatch(ctx, final)
	if err != nil {
		return false, fmt.Errorf("append derived facts: %w", err)
	}
	s.notifyAppend()
	for i, r := range rs {
		st := final[i].Body.(*log.Store)
		if st.Kind == log.KindKnowledge {
			for _, df := range keptFacts {
				if df.ID == r.ID.String() && df.Reason == "" {
					df.Seq = r.Seq
					res.Stored = append(res.Stored, df)
				}
			}
		} else {
			p := profiles[r.ID.String()]
			p.Seq = r.Seq
			res.Profiles = append(res.Profiles, p)
		}
	}
	return true, nil
}

// renderProfiles renders the profile of each subject from the current
// facts among items (those in gone left out) and returns the entries of
// the ones that changed: a new profile superseding the subject's current
// one when it is live and not in gone. meta is added to each profile's.
func renderProfiles(items []consolidate.Item, subjects []string, gone map[string]bool, meta map[string]string) (map[string]DerivedProfile, []log.Entry) {
	out := map[string]DerivedProfile{}
	var entries []log.Entry
	for _, subj := range subjects {
		facts := consolidate.CurrentFacts(items, subj, gone)
		var cur *consolidate.Item
		for i := range items {
			it := &items[i]
			if it.Kind != consolidate.KindProfile || it.Subject != subj || gone[it.ID] {
				continue
			}
			superseded := false
			for _, by := range it.SupersededBy {
				if !gone[by] {
					superseded = true
				}
			}
			if !superseded {
				cur = it
			}
		}
		if len(facts) == 0 {
			continue
		}
		if len(facts) > consolidate.MaxProfileFacts {
			facts = facts[len(facts)-consolidate.MaxProfileFacts:] // the newest
		}
		text := consolidate.RenderProfile(subj, facts)
		if cur != nil && cur.Content == text {
			continue
		}
		ids := make([]string, len(facts))
		for i, f := range facts {
			ids[i] = f.ID
		}
		m := map[string]string{consolidate.MetaDerivedFrom: consolidate.JoinIDs(ids), consolidate.MetaSubject: subj}
		for k, v := range meta {
			m[k] = v
		}
		st := &log.Store{Kind: log.KindProfile, Session: consolidate.Session, Role: consolidate.Role, Content: text, Meta: m}
		if cur != nil {
			st.Supersedes = []string{cur.ID}
		}
		id := newID()
		entries = append(entries, log.Entry{ID: id, Body: st})
		out[id.String()] = DerivedProfile{ID: id.String(), Subject: subj, Facts: ids}
	}
	return out, entries
}

// DerivedCascade is what a tombstone did to derived memory.
type DerivedCascade struct {
	consolidate.Cascade
	Profiles []DerivedProfile `json:"new_profiles,omitempty"`
}

// derivedCascade plans what tombstone t (its event id tid, removing the
// live chunks hit) does to derived memory, and returns the entries that
// carry it out, to be appended in t's batch: one tombstone per derived
// item whose support goes (its reason names its sources and t), an edit
// per fact that keeps other live sources (its derived_from without the
// forgotten ones, dropped_sources listing them), and the profiles of the
// subjects touched, rendered again.
func derivedCascade(set *projstd.Set, tid log.ID, hit []string) ([]log.Entry, *DerivedCascade, error) {
	chunks, items, err := derivedChunks(set)
	if err != nil || len(items) == 0 {
		return nil, nil, err
	}
	removed := make(map[string]bool, len(hit))
	for _, id := range hit {
		removed[id] = true
	}
	var readErr error
	content := func(id string) (string, bool) {
		c, ok, err := set.Timelines.Chunk(id)
		if err != nil && readErr == nil {
			readErr = err
		}
		return c.Content, ok && err == nil
	}
	plan := consolidate.PlanCascade(items, removed, content)
	if readErr != nil {
		return nil, nil, readErr
	}
	if len(plan.Remove) == 0 && len(plan.Rewire) == 0 {
		return nil, nil, nil
	}
	byID := map[string]int{}
	for i, c := range chunks {
		byID[c.ID] = i
	}
	var entries []log.Entry
	for _, r := range plan.Remove {
		c := chunks[byID[r.ID]]
		entries = append(entries, log.Entry{Body: &log.Tombstone{Chunks: []string{r.ID},
			Reason: fmt.Sprintf("derived memory: %s (derived from %s; forgotten with tombstone %s)", r.Reason, c.Meta[consolidate.MetaDerivedFrom], tid)}})
	}
	for _, rw := range plan.Rewire {
		c := chunks[byID[rw.ID]]
		m := make(map[string]string, len(c.Meta)+1)
		for k, v := range c.Meta {
			m[k] = v
		}
		m[consolidate.MetaDerivedFrom] = consolidate.JoinIDs(rw.Sources)
		m[consolidate.MetaDropped] = consolidate.JoinIDs(rw.Dropped)
		entries = append(entries, log.Entry{Body: &log.Edit{Target: c.ID, Prev: c.Seq, By: "ucl.consolidate",
			Store: log.Store{ChunkID: c.ID, Kind: c.Kind, Session: c.Session, Role: c.Role, Content: c.Content,
				Meta: m, Parent: c.Parent, Time: c.Time, Supersedes: c.Supersedes}}})
		items[indexOf(items, rw.ID)].Sources = rw.Sources
	}
	// The profiles of the subjects touched that had one, from what stays.
	had := map[string]bool{}
	for _, it := range items {
		if it.Kind == consolidate.KindProfile {
			had[it.Subject] = true
		}
	}
	var subjects []string
	for _, subj := range plan.Profiles {
		if had[subj] {
			subjects = append(subjects, subj)
		}
	}
	profiles, profEntries := renderProfiles(items, subjects, removed, nil)
	entries = append(entries, profEntries...)
	dc := &DerivedCascade{Cascade: plan}
	for _, e := range profEntries {
		dc.Profiles = append(dc.Profiles, profiles[e.ID.String()])
	}
	return entries, dc, nil
}

// written fills in the seqs of the profiles the cascade wrote.
func (dc *DerivedCascade) written(entries []log.Entry, rs []log.Result) {
	if dc == nil {
		return
	}
	for i, e := range entries {
		for j := range dc.Profiles {
			if i < len(rs) && dc.Profiles[j].ID == e.ID.String() {
				dc.Profiles[j].Seq = rs[i].Seq
			}
		}
	}
}

func indexOf(items []consolidate.Item, id string) int {
	for i, it := range items {
		if it.ID == id {
			return i
		}
	}
	return -1
}

// ProfileRequest asks for the current profiles.
type ProfileRequest struct {
	// Subject selects one subject ("" every subject).
	Subject string `json:"subject,omitempty"`
}

// ProfileFactItem is one fact of a profile, with the turns it comes from.
type ProfileFactItem struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Sources []string `json:"derived_from"`
}

// Profile is the current profile of one subject.
type Profile struct {
	ID      string            `json:"id"`
	Seq     uint64            `json:"seq"`
	Subject string            `json:"subject"`
	Content string            `json:"content"`
	Facts   []ProfileFactItem `json:"facts"`
}

// ProfileResult lists current profiles by subject.
type ProfileResult struct {
	Profiles []Profile `json:"profiles"`
}

// Profile returns the current (not superseded) profile of each subject,
// or of req.Subject, with its facts and their sources.
func (s *Store) Profile(ctx context.Context, req ProfileRequest) (*ProfileResult, error) {
	res := &ProfileResult{Profiles: []Profile{}}
	err := s.readProj(ctx, nil, func(set *projstd.Set, _ bool) error {
		_, items, err := derivedChunks(set)
		if err != nil {
			return err
		}
		byID := map[string]consolidate.Item{}
		for _, it := range items {
			byID[it.ID] = it
		}
		for _, it := range items {
			if it.Kind != consolidate.KindProfile || len(it.SupersededBy) > 0 || (req.Subject != "" && it.Subject != req.Subject) {
				continue
			}
			p := Profile{ID: it.ID, Seq: it.Seq, Subject: it.Subject, Content: it.Content, Facts: []ProfileFactItem{}}
			for _, id := range it.Sources {
				f := byID[id]
				p.Facts = append(p.Facts, ProfileFactItem{ID: id, Text: f.Content, Sources: f.Sources})
			}
			res.Profiles = append(res.Profiles, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	sort.Slice(res.Profiles, func(i, j int) bool { return res.Profiles[i].Subject < res.Profiles[j].Subject })
	return res, nil
}

// Consolidator is implemented by *Store and *Client: derived memory over
// the socket too.
type Consolidator interface {
	Consolidate(ctx context.Context, req ConsolidateRequest) (*ConsolidateResult, error)
	Profile(ctx context.Context, req ProfileRequest) (*ProfileResult, error)
}

// ConsolidateEvery runs Consolidate every interval until ctx ends, in the
// owner process (`[consolidate] every`); report gets each run's result or
// error (an error does not stop the schedule: the next run retries what
// is still pending).
func ConsolidateEvery(ctx context.Context, c Consolidator, every time.Duration, report func(*ConsolidateResult, error)) {
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := c.Consolidate(ctx, ConsolidateRequest{})
		if ctx.Err() != nil {
			return
		}
		if report != nil {
			report(res, err)
		}
	}
}

func hasTombstone(entries []log.Entry) bool {
	for _, e := range entries {
		if _, ok := e.Body.(*log.Tombstone); ok {
			return true
		}
	}
	return false
}

// appendCascadeLocked is derivedCascade for the tombstones of an Append
// input (the caller holds projMu): one cascade over everything they
// match, naming the input's last tombstone, whose event id it sets.
func (s *Store) appendCascadeLocked(ctx context.Context, entries []log.Entry) ([]log.Entry, error) {
	set, err := s.caughtUpLocked(ctx, nil)
	if err != nil {
		return nil, err
	}
	var hit []string
	last := -1
	for i, e := range entries {
		t, ok := e.Body.(*log.Tombstone)
		if !ok {
			continue
		}
		m, err := set.Timelines.Matches(t)
		if err != nil {
			return nil, err
		}
		hit = append(hit, m...)
		last = i
	}
	if len(hit) == 0 {
		return nil, nil
	}
	if entries[last].ID.IsZero() {
		entries[last].ID = newID()
	}
	derived, _, err := derivedCascade(set, entries[last].ID, hit)
	return derived, err
}

// contextProfiles renders the current profiles for a context, as many as
// fit in max tokens (in subject order).
func (s *Store) contextProfiles(ctx context.Context, format string, max int) (string, error) {
	pr, err := s.Profile(ctx, ProfileRequest{})
	if err != nil {
		return "", err
	}
	ps := make([]consolidate.ContextProfile, len(pr.Profiles))
	for i, p := range pr.Profiles {
		ps[i] = consolidate.ContextProfile{ID: p.ID, Subject: p.Subject, Content: p.Content}
	}
	for len(ps) > 0 && textutil.EstimateTokens(consolidate.ContextBlock(format, ps)) > max {
		ps = ps[:len(ps)-1]
	}
	return consolidate.ContextBlock(format, ps), nil
}
