package consolidate

import (
	"sort"
	"strings"
)

// Where derived items live and what their meta holds (doc.go).
const (
	// Session holds every derived item, so that they are listed, found and
	// re-checked in one place whatever sessions their sources are in.
	Session = "ucl.memory"
	// Role is the role of every derived item.
	Role = "memory"
	// Kinds of derived items.
	KindKnowledge = "knowledge"
	KindProfile   = "profile"

	MetaDerivedFrom   = "derived_from"         // source ids, comma-separated, in the model's order
	MetaSubject       = "subject"              // the fact's or the profile's subject
	MetaModel         = "model"                // the model that answered
	MetaPromptVersion = "prompt_version"       // PromptVersion of the request
	MetaRequestHash   = "request_hash"         // hex SHA-256 of the request body
	MetaThrough       = "consolidated_through" // decimal seq: the turns offered through it
	MetaScope         = "consolidated_scope"   // the session a run was limited to ("" all)
	MetaDropped       = "dropped_sources"      // source ids a tombstone took away, comma-separated
)

// SplitIDs parses a comma-separated id list ("" is none).
func SplitIDs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// JoinIDs is SplitIDs' inverse. An id holding a comma cannot be cited
// (the engine refuses such a source).
func JoinIDs(ids []string) string { return strings.Join(ids, ",") }

// IsDerived reports whether an item of this kind and meta is derived
// memory: a knowledge or profile item that cites its sources.
func IsDerived(kind string, meta map[string]string) bool {
	return (kind == KindKnowledge || kind == KindProfile) && meta[MetaDerivedFrom] != ""
}

// Item is a live derived item, as the cascade and the profile see it.
type Item struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	Subject string   `json:"subject"`
	Content string   `json:"content"`
	Sources []string `json:"derived_from"`
	// SupersededBy lists the live items that supersede this one.
	SupersededBy []string `json:"superseded_by,omitempty"`
	// Dropped are sources taken away earlier (kept in the meta).
	Dropped []string `json:"dropped_sources,omitempty"`
	Seq     uint64   `json:"seq"`
}

// MaxProfileFacts bounds a profile: it lists a subject's newest current
// facts, at most this many (the others stay searchable as knowledge).
const MaxProfileFacts = 100

// ProfileFact is one line of a profile.
type ProfileFact struct {
	ID      string
	Text    string
	Sources []string
}

// RenderProfile writes a subject's profile: its current facts in the
// given order, each with the ids of the turns it comes from, so a model
// reading it can open them. Deterministic: the same facts give the same
// text (and so the dedup projection sees a re-render as a duplicate).
func RenderProfile(subject string, facts []ProfileFact) string {
	var b strings.Builder
	b.WriteString("Profile of ")
	b.WriteString(subject)
	b.WriteString(":")
	for _, f := range facts {
		b.WriteString("\n- ")
		b.WriteString(f.Text)
		b.WriteString(" [fact ")
		b.WriteString(f.ID)
		b.WriteString("; sources ")
		b.WriteString(strings.Join(f.Sources, ", "))
		b.WriteString("]")
	}
	return b.String()
}

// CurrentFacts are the facts of subject among items that are not in gone
// and not superseded by a live item outside gone, in seq order: what its
// profile lists.
func CurrentFacts(items []Item, subject string, gone map[string]bool) []ProfileFact {
	var cur []Item
	for _, it := range items {
		if it.Kind != KindKnowledge || it.Subject != subject || gone[it.ID] {
			continue
		}
		superseded := false
		for _, by := range it.SupersededBy {
			if !gone[by] {
				superseded = true
			}
		}
		if !superseded {
			cur = append(cur, it)
		}
	}
	sort.SliceStable(cur, func(i, j int) bool { return cur[i].Seq < cur[j].Seq })
	out := make([]ProfileFact, len(cur))
	for i, it := range cur {
		out[i] = ProfileFact{ID: it.ID, Text: it.Content, Sources: it.Sources}
	}
	return out
}

// Removal is a derived item a cascade tombstones, and why.
type Removal struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// Rewire is a fact that keeps enough live sources: it drops the removed
// citations (an edit of its meta; its text is unchanged).
type Rewire struct {
	ID      string   `json:"id"`
	Sources []string `json:"derived_from"`
	Dropped []string `json:"dropped_sources"`
}

// Cascade is what forgetting some items does to derived memory.
type Cascade struct {
	Remove []Removal `json:"removed,omitempty"`
	Rewire []Rewire  `json:"rewired,omitempty"`
	// Profiles are the subjects whose current profile was removed and
	// must be rendered again from CurrentFacts (none left: no profile).
	Profiles []string `json:"profiles,omitempty"`
}

// PlanCascade decides what happens to the live derived items when the
// items in removed (ids) go: a fact citing a removed id keeps the rest of
// its sources if it is still supported by them (Check on their text,
// read with content; a source content cannot read counts as gone), else
// it goes too; a profile citing a removed fact goes, and a current one is
// rendered again. It runs to a fixpoint, so a removal reaches profiles
// through the facts it removes. removed is extended with every removal.
func PlanCascade(items []Item, removed map[string]bool, content func(id string) (string, bool)) Cascade {
	var c Cascade
	// live returns the sources of a fact that are neither removed nor
	// unreadable, with their text.
	live := func(it Item) (keep, dropped, texts []string) {
		for _, s := range it.Sources {
			if removed[s] {
				dropped = append(dropped, s)
				continue
			}
			if t, ok := content(s); ok {
				keep = append(keep, s)
				texts = append(texts, t)
			} else {
				dropped = append(dropped, s)
			}
		}
		return keep, dropped, texts
	}
	for changed := true; changed; {
		changed = false
		for _, it := range items {
			if removed[it.ID] || !citesAny(it.Sources, removed) {
				continue
			}
			reason := "a fact it lists was forgotten"
			if it.Kind != KindProfile {
				keep, _, texts := live(it)
				if len(keep) == 0 {
					reason = "every source was forgotten"
				} else if sup := Check(it.Content, texts); !sup.OK {
					// Not sup.Reason: the reason is stored in a live
					// tombstone, and the missing words are the
					// forgotten content.
					reason = "its remaining sources do not support it"
				} else {
					continue // rewired below, once the removals are known
				}
			}
			removed[it.ID] = true
			c.Remove = append(c.Remove, Removal{ID: it.ID, Kind: it.Kind, Reason: reason})
			c.Profiles = appendOnce(c.Profiles, it.Subject)
			changed = true
		}
	}
	for _, it := range items {
		if it.Kind == KindProfile || removed[it.ID] || !citesAny(it.Sources, removed) {
			continue
		}
		keep, dropped, _ := live(it)
		c.Rewire = append(c.Rewire, Rewire{ID: it.ID, Sources: keep, Dropped: append(append([]string(nil), it.Dropped...), dropped...)})
		// Its profile line names its sources: render the profile again.
		c.Profiles = appendOnce(c.Profiles, it.Subject)
	}
	sort.Strings(c.Profiles)
	return c
}

func citesAny(ids []string, set map[string]bool) bool {
	for _, id := range ids {
		if set[id] {
			return true
		}
	}
	return false
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
