// Package projtest holds what every projection's tests share: a
// deterministic event generator (a valid hash chain of store, tombstone,
// share and rekey events with ~60-word English-ish contents), a reference
// model of which chunks a stream leaves alive, an in-memory Source, and the
// conformance suite Run that every projections.Projection must pass.
//
// Everything here is deterministic by seed: the same (seed, n) gives the
// same events, hashes included, on every machine.
package projtest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// BaseTime is the append time of seq 1 in generated streams (2024-01-01 UTC).
const BaseTime int64 = 1704067200000

var vocab = strings.Fields(`the a an of to in for on with from by about into over after before
memory log event chunk session turn user assistant tool document note project plan
release build test bug fix design index search query vector summary context token
budget time week month morning evening meeting review draft report email letter
garden kitchen travel train flight hotel weather river mountain city street market
coffee tea bread recipe dinner friend family teacher student doctor music guitar
piano song book chapter story novel paper idea question answer problem solution
database server client network cache disk file folder backup restore key secret
quick slow early late small large new old simple careful bright quiet warm cold
write read open close start finish move keep share store delete remember forget
think explain describe compare measure improve change check verify rebuild deploy
because while although when where which that this those these then also still
arweave wallet anchor proof chain hash segment gateway upload mirror audit grant`)

var names = []string{"Alice", "Bob", "Carol", "Dave", "Eve", "Mallory", "Oscar", "Peggy"}

// Text returns about words words of plausible English-ish sentences drawn
// from a fixed vocabulary (capitalised, 5-14 words each, ending in '.').
func Text(r *rand.Rand, words int) string {
	var b strings.Builder
	for n := 0; n < words; {
		sl := 5 + r.Intn(10)
		if n+sl > words && n > 0 {
			sl = max(words-n, 3)
		}
		for i := 0; i < sl; i++ {
			w := vocab[r.Intn(len(vocab))]
			if r.Intn(25) == 0 {
				w = names[r.Intn(len(names))]
			}
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString([]string{".", ".", ".", "?", "!"}[r.Intn(5)])
		n += sl
	}
	return b.String()
}

// Config shapes a generated stream. Zero fields take the defaults noted.
type Config struct {
	Seed int64
	N    int // number of events
	// Sessions is the size of the session pool (default 4 + N/200, max 200).
	Sessions int
	// Words is the approximate content length (default 60).
	Words int
	// StoresOnly disables tombstones, shares and rekeys.
	StoresOnly bool
	// Vocab, when > 0, draws content words from a Zipf distribution over a
	// synthetic vocabulary of this many words (plus function words), like
	// real text, instead of uniformly from the ~200-word fixed vocabulary
	// (where every word is in a quarter of all chunks: a worst case for
	// full-text search). Benchmarks of query latency use it.
	Vocab int
	// Conversation adds the conversation model: tool calls with their
	// tool fields, stores that supersede earlier items, and edit events of
	// single items and of whole documents (re-chunked, with removes).
	Conversation bool
}

// ConvEvents returns n events of the full mix plus the conversation model
// (Config.Conversation).
func ConvEvents(seed int64, n int) []*log.Event {
	return Generate(Config{Seed: seed, N: n, Conversation: true})
}

// Events returns n events of the full mix (seed-deterministic): about 84%
// stores across sessions, kinds and roles (with meta, parents, split
// documents, re-stored ids, knowledge without session), 8% tombstones (by
// chunk ids, by session, by time range, by session and range, including
// ones that target nothing) and 8% share_grant / share_revoke / rekey.
func Events(seed int64, n int) []*log.Event {
	return Generate(Config{Seed: seed, N: n})
}

// StoreEvents returns n store events only: the shape of a bulk import,
// used by rebuild benchmarks ("100K chunks of ~60 words").
func StoreEvents(seed int64, n int) []*log.Event {
	return Generate(Config{Seed: seed, N: n, StoresOnly: true})
}

// functionWords are the head of every generated sentence's vocabulary.
var functionWords = strings.Fields("the a an of to in for on with from by about into over after before and or but is was it this that")

// ZipfWord is the synthetic word of a rank (0 = most frequent): consonant-
// vowel syllables, deterministic, 3 to 9 letters.
func ZipfWord(rank int) string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	var b []byte
	for {
		x := rank % (len(cons) * len(vows))
		b = append(b, cons[x/len(vows)], vows[x%len(vows)])
		rank /= len(cons) * len(vows)
		if rank == 0 {
			break
		}
	}
	return string(append(b, 'x'))
}

// TextZipf returns about words words of sentences whose content words
// follow a Zipf law (s = 1.1) over vocab synthetic words, 40% function words.
func TextZipf(r *rand.Rand, words, vocab int) string {
	z := rand.NewZipf(r, 1.1, 1, uint64(vocab-1))
	var b strings.Builder
	for n := 0; n < words; {
		sl := 5 + r.Intn(10)
		for i := 0; i < sl; i++ {
			var w string
			if r.Intn(10) < 4 {
				w = functionWords[r.Intn(len(functionWords))]
			} else {
				w = ZipfWord(int(z.Uint64()))
			}
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteByte('.')
		n += sl
	}
	return b.String()
}

// QueryText returns a query of 2-4 synthetic words of ranks 20..2000: the
// moderately common words users search for in a Zipf corpus.
func QueryText(r *rand.Rand) string {
	n := 2 + r.Intn(3)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = ZipfWord(20 + r.Intn(1980))
	}
	return strings.Join(ws, " ")
}

func (cfg Config) text(r *rand.Rand, words int) string {
	if cfg.Vocab > 0 {
		return TextZipf(r, words, cfg.Vocab)
	}
	return Text(r, words)
}

type genSession struct {
	id       string
	t        int64 // content-time cursor
	lastUser string
}

// Generate returns the stream described by cfg.
func Generate(cfg Config) []*log.Event {
	r := rand.New(rand.NewSource(cfg.Seed))
	if cfg.Words <= 0 {
		cfg.Words = 60
	}
	if cfg.Sessions <= 0 {
		cfg.Sessions = min(4+cfg.N/200, 200)
	}
	sess := make([]*genSession, cfg.Sessions)
	for i := range sess {
		sess[i] = &genSession{
			id: fmt.Sprintf("sess-%d-%03d", cfg.Seed, i),
			t:  BaseTime - 90*86400000 + int64(i)*3600000 + r.Int63n(3600000),
		}
	}
	var stored []*log.Store // every store so far (for tombstone targets)
	var grants []log.ID
	bodies := make([]log.Body, 0, cfg.N)
	ids := make([]log.ID, 0, cfg.N)
	newID := func() log.ID {
		var id log.ID
		r.Read(id[:])
		return id
	}
	seq := 0
	add := func(b log.Body, id log.ID) {
		bodies = append(bodies, b)
		ids = append(ids, id)
		seq++
	}
	docParts := map[string]int{} // document id → chunks of its current version
	lastSeq := map[string]int{}  // item id → seq of its current version's first event
	var items []string           // ids of single items and documents, for edits and supersedes
	for seq < cfg.N {
		x := r.Intn(100)
		if cfg.StoresOnly || len(stored) < 5 {
			x = r.Intn(84)
		}
		if cfg.Conversation && len(items) > 3 && r.Intn(12) == 0 {
			editEvents(r, cfg, items, docParts, lastSeq, &seq, add, newID)
			continue
		}
		switch {
		case x < 84:
			s := sess[r.Intn(len(sess))]
			s.t += 10000 + r.Int63n(300000)
			id := newID()
			st := &log.Store{Session: s.id, Time: s.t, Content: cfg.text(r, cfg.Words-10+r.Intn(21))}
			st.ChunkID = fmt.Sprintf("c-%d-%d", cfg.Seed, seq+1)
			if r.Intn(10) == 0 {
				st.ChunkID = id.String() // as decoded when the body omits it
			}
			if r.Intn(2) == 0 {
				st.Meta = map[string]string{"source": []string{"cli", "mcp", "import", "hook"}[r.Intn(4)], "lang": "en"}
				if r.Intn(3) == 0 {
					st.Meta["tag"] = vocab[r.Intn(len(vocab))]
				}
			}
			k := r.Intn(100)
			switch {
			case k < 60:
				st.Kind = log.KindConversation
				if s.lastUser == "" || r.Intn(2) == 0 {
					st.Role = "user"
					s.lastUser = st.ChunkID
				} else {
					st.Role = "assistant"
					st.Parent = s.lastUser
				}
			case k < 75:
				st.Kind = log.KindToolCall
				st.Role = "tool"
				st.Meta = map[string]string{"tool": []string{"search", "read_file", "bash"}[r.Intn(3)]}
				if s.lastUser != "" {
					st.Parent = s.lastUser
				}
				if cfg.Conversation {
					st.Tool = &log.ToolCall{Name: st.Meta["tool"], Args: fmt.Sprintf(`{"q":%q}`, vocab[r.Intn(len(vocab))]),
						Status: []string{"ok", "error", "pending"}[r.Intn(3)]}
					if st.Tool.Status == "pending" {
						st.Content = ""
					}
				}
			case k < 90:
				// A document split in parts, emitted as consecutive events
				// (as many as fit in N).
				parts := 2 + r.Intn(3)
				parent := fmt.Sprintf("doc-%d-%d", cfg.Seed, seq+1)
				docTime := s.t - r.Int63n(30*86400000)
				for i := 0; i < parts && seq < cfg.N; i++ {
					pid := newID()
					d := &log.Store{
						ChunkID: fmt.Sprintf("%s#%d", parent, i), Kind: log.KindDocument,
						Session: s.id, Content: cfg.text(r, cfg.Words-10+r.Intn(21)),
						ChunkParent: parent, ChunkIndex: i, Time: docTime,
						Meta: map[string]string{"name": parent + ".md"},
					}
					stored = append(stored, d)
					if i == 0 {
						lastSeq[parent] = seq + 1
						items = append(items, parent)
					}
					docParts[parent] = i + 1
					add(d, pid)
				}
				continue
			default:
				st.Kind = log.KindKnowledge
				if r.Intn(2) == 0 {
					st.Session = ""
				}
				if cfg.Conversation && len(items) > 0 && r.Intn(2) == 0 {
					if old := items[r.Intn(len(items))]; old != st.ChunkID {
						st.Supersedes = []string{old}
					}
				}
			}
			if r.Intn(50) == 0 && len(stored) > 0 {
				// Re-store an existing id (overwrite), maybe elsewhere.
				st.ChunkID = stored[r.Intn(len(stored))].ChunkID
				st.Parent = ""
			}
			stored = append(stored, st)
			if _, doc := docParts[st.ChunkID]; !doc {
				if _, seen := lastSeq[st.ChunkID]; !seen {
					items = append(items, st.ChunkID)
				}
				lastSeq[st.ChunkID] = seq + 1
			}
			add(st, id)
		case x < 92:
			ts := &log.Tombstone{Reason: []string{"user request", "pii", "duplicate", ""}[r.Intn(4)]}
			switch k := r.Intn(10); {
			case k < 6:
				for i := 0; i < 1+r.Intn(3); i++ {
					ts.Chunks = append(ts.Chunks, stored[r.Intn(len(stored))].ChunkID)
				}
				if r.Intn(5) == 0 {
					ts.Chunks = append(ts.Chunks, "no-such-chunk")
				}
			case k < 7:
				ts.Session = sess[r.Intn(len(sess))].id
			case k < 9:
				c := stored[r.Intn(len(stored))]
				ts.From = c.Time - r.Int63n(600000)
				ts.To = c.Time + 1 + r.Int63n(600000)
			default:
				c := stored[r.Intn(len(stored))]
				ts.Session = c.Session
				if ts.Session == "" {
					ts.Session = sess[0].id
				}
				ts.From = c.Time - 3600000
				ts.To = c.Time + 3600000
			}
			add(ts, newID())
		case x < 96:
			g := &log.ShareGrant{
				Grantee:  fmt.Sprintf("addr-%d", r.Intn(5)),
				ShareKey: []byte("wrapped-share-key"),
				Sessions: []string{sess[r.Intn(len(sess))].id},
				Keys:     []log.WrappedKey{{Seq: uint64(1 + r.Intn(seq))}},
			}
			id := newID()
			grants = append(grants, id)
			add(g, id)
		case x < 98 && len(grants) > 0:
			add(&log.ShareRevoke{Grant: grants[r.Intn(len(grants))], Grantee: "addr-0", Reason: "done"}, newID())
		default:
			add(&log.Rekey{Epoch: uint32(2 + r.Intn(5)), Keys: []log.WrappedKey{{Seq: uint64(1 + r.Intn(seq))}}}, newID())
		}
	}
	evs, err := chain(bodies, ids, 1, log.Hash{})
	if err != nil {
		// Only a bug in this generator gets here.
		panic(fmt.Sprintf("projtest: generated an invalid event: %v", err))
	}
	return evs
}

// editEvents appends the edit of a random earlier item: one event for a
// single item, a batch of re-chunk events (2 to 4 chunks, the first with
// the removes) for a document. The new version keeps the session and the
// content time; an edit after a tombstone is generated too (the engine
// refuses it, projections must still apply it the same way everywhere).
func editEvents(r *rand.Rand, cfg Config, items []string, docParts map[string]int, lastSeq map[string]int,
	seq *int, add func(log.Body, log.ID), newID func() log.ID) {
	target := items[r.Intn(len(items))]
	by := []string{"alice", "bob", "mcp", ""}[r.Intn(4)]
	prev := uint64(lastSeq[target])
	base := log.Store{Kind: log.KindKnowledge, Session: fmt.Sprintf("sess-%d-%03d", cfg.Seed, 0), Time: BaseTime - 86400000}
	n, doc := docParts[target]
	if !doc {
		st := base
		st.ChunkID, st.Content = target, "Edited. "+cfg.text(r, 20+r.Intn(20))
		if r.Intn(2) == 0 {
			st.Meta = map[string]string{"rev": fmt.Sprint(*seq)}
		}
		lastSeq[target] = *seq + 1
		add(&log.Edit{Target: target, Prev: prev, By: by, Store: st}, newID())
		return
	}
	parts := 1 + r.Intn(3)
	var removes []string
	for i := parts; i < n; i++ {
		removes = append(removes, fmt.Sprintf("%s#%d", target, i))
	}
	lastSeq[target] = *seq + 1
	for i := 0; i < parts && *seq < cfg.N; i++ {
		st := base
		st.Kind = log.KindDocument
		st.ChunkID, st.ChunkParent, st.ChunkIndex = fmt.Sprintf("%s#%d", target, i), target, i
		st.Content = cfg.text(r, cfg.Words-10+r.Intn(21))
		ed := &log.Edit{Target: target, By: by, Store: st}
		if i == 0 {
			ed.Prev, ed.Removes = prev, removes
		}
		add(ed, newID())
	}
	docParts[target] = parts
}

// Chain seals bodies into a valid chain starting at seq 1 (append time
// BaseTime + seq seconds, event ids derived from the seq). A store body's
// zero Time becomes the append time, as the log decoder does.
func Chain(bodies ...log.Body) ([]*log.Event, error) {
	ids := make([]log.ID, len(bodies))
	for i := range ids {
		sum := sha256.Sum256(fmt.Appendf(nil, "projtest-id-%d", i+1))
		copy(ids[i][:], sum[:])
	}
	return chain(bodies, ids, 1, log.Hash{})
}

func chain(bodies []log.Body, ids []log.ID, first uint64, prev log.Hash) ([]*log.Event, error) {
	out := make([]*log.Event, 0, len(bodies))
	var hdrBuf [log.HeaderSize]byte
	for i, b := range bodies {
		h := log.Header{
			// Format 3, hashed by its rule (SHA-256 of header ‖ body,
			// the body left plain: no projection reads a sealed one), so
			// the projections' golden files, which hold event hashes in
			// their checkpoints, do not follow the log's format.
			Version: log.FormatVersion3, Type: b.Type(), Seq: first + uint64(i),
			Time: BaseTime + int64(first+uint64(i))*1000, ID: ids[i], KeyEpoch: 1, Prev: prev,
		}
		if st, ok := b.(*log.Store); ok {
			if st.Time == 0 {
				st.Time = h.Time
			}
			if st.ChunkID == "" {
				st.ChunkID = h.ID.String()
			}
		}
		body, err := log.EncodeBody(b, &h)
		if err != nil {
			return nil, fmt.Errorf("encode body of seq %d: %w", h.Seq, err)
		}
		h.Encode(hdrBuf[:])
		sum := sha256.New()
		sum.Write(hdrBuf[:])
		sum.Write(body)
		ev := &log.Event{Header: h, Body: b}
		copy(ev.Hash[:], sum.Sum(nil))
		prev = ev.Hash
		out = append(out, ev)
	}
	return out, nil
}

// Live runs the reference model over evs: it returns every chunk id ever
// stored, mapped to whether it is alive at the end (tombstones applied with
// projections.TombstoneMatches, only to chunks stored before them).
func Live(evs []*log.Event) map[string]bool {
	type chunk struct {
		seq     uint64
		session string
		time    int64
	}
	state := map[string]chunk{}
	out := map[string]bool{}
	for _, ev := range evs {
		switch b := ev.Body.(type) {
		case *log.Store:
			state[b.ChunkID] = chunk{ev.Seq, b.Session, b.Time}
			out[b.ChunkID] = true
		case *log.Edit:
			for _, id := range b.Removes {
				if c, ok := state[id]; ok && c.seq < ev.Seq {
					delete(state, id)
					out[id] = false
				}
			}
			state[b.Store.ChunkID] = chunk{ev.Seq, b.Store.Session, b.Store.Time}
			out[b.Store.ChunkID] = true
		case *log.Tombstone:
			for id, c := range state {
				if c.seq < ev.Seq && projections.TombstoneMatches(b, id, c.session, c.time) {
					delete(state, id)
					out[id] = false
				}
			}
		}
	}
	return out
}

// LiveIDs returns the sorted ids alive after evs.
func LiveIDs(evs []*log.Event) []string {
	var ids []string
	for id, ok := range Live(evs) {
		if ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// MemSource is an in-memory projections.Source over a slice of events.
// It is safe for concurrent use.
type MemSource struct {
	mu  sync.RWMutex
	evs []*log.Event
}

// NewMemSource returns a source holding evs (seqs must be 1..len(evs)).
func NewMemSource(evs []*log.Event) *MemSource {
	return &MemSource{evs: append([]*log.Event(nil), evs...)}
}

// Set replaces the whole log (to simulate another chain or a truncation).
func (m *MemSource) Set(evs []*log.Event) {
	m.mu.Lock()
	m.evs = append([]*log.Event(nil), evs...)
	m.mu.Unlock()
}

// Head returns the last seq and its hash (0 and zero for an empty log).
func (m *MemSource) Head() (uint64, log.Hash) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.evs) == 0 {
		return 0, log.Hash{}
	}
	ev := m.evs[len(m.evs)-1]
	return ev.Seq, ev.Hash
}

// HashAt returns the hash of seq, log.ErrNotFound outside 1..head.
func (m *MemSource) HashAt(seq uint64) (log.Hash, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if seq == 0 || seq > uint64(len(m.evs)) {
		return log.Hash{}, fmt.Errorf("hash at %d: %w", seq, log.ErrNotFound)
	}
	return m.evs[seq-1].Hash, nil
}

// Events calls fn for seqs from..to inclusive (to = 0: the head).
func (m *MemSource) Events(ctx context.Context, from, to uint64, fn func(*log.Event) error) error {
	m.mu.RLock()
	evs := m.evs
	m.mu.RUnlock()
	if from == 0 {
		from = 1
	}
	if to == 0 || to > uint64(len(evs)) {
		to = uint64(len(evs))
	}
	for s := from; s <= to; s++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(evs[s-1]); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// EventAt returns the event at seq, log.ErrNotFound outside 1..head (it
// makes MemSource a projections.EventReader).
func (m *MemSource) EventAt(seq uint64) (*log.Event, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if seq == 0 || seq > uint64(len(m.evs)) {
		return nil, fmt.Errorf("event %d: %w", seq, log.ErrNotFound)
	}
	return m.evs[seq-1], nil
}
