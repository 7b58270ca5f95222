package ucl

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// --as-of: memory as it stood at a seq. Before a tombstone the
// tombstoned item is found again; before an edit, its old text; items
// stored later are left out; at the head, the answer is today's.
func TestAsOf(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	remember := func(content string) EventResult {
		t.Helper()
		r, err := s.Remember(ctx, RememberRequest{Content: content, Session: "trip", Time: "2023-05-08T10:00:00Z", AllowDuplicate: true})
		if err != nil {
			t.Fatal(err)
		}
		return r.Results[0]
	}
	search := func(text, asOf string) []string {
		t.Helper()
		r, err := s.Search(ctx, SearchRequest{Text: text, AsOf: asOf, Now: "2023-06-01T00:00:00Z"})
		if err != nil {
			t.Fatalf("search %q as of %q: %v", text, asOf, err)
		}
		var out []string
		for _, x := range r.Results {
			out = append(out, x.Content)
		}
		return out
	}
	hotel := remember("The hotel in Lisbon is booked for June.")
	flight := remember("The flight to Lisbon leaves at nine.")
	// Only stores so far: the live projections answer.
	if got := search("Lisbon", itoa(hotel.Seq)); len(got) != 1 || !strings.Contains(got[0], "hotel") {
		t.Fatalf("as of seq 1: %q", got)
	}
	ed, err := s.Edit(ctx, EditRequest{ID: flight.ID.String(), Content: "The flight to Lisbon leaves at noon."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{hotel.ID.String()}}); err != nil {
		t.Fatal(err)
	}
	later := remember("A taxi to the Lisbon airport is ordered.")
	// Now: the hotel is gone, the flight says noon.
	now := strings.Join(search("Lisbon", ""), "|")
	if strings.Contains(now, "hotel") || !strings.Contains(now, "noon") || strings.Contains(now, "nine") || !strings.Contains(now, "taxi") {
		t.Fatalf("now: %s", now)
	}
	// As of the second store: both items as they were, nothing later.
	then := strings.Join(search("Lisbon", itoa(flight.Seq)), "|")
	if !strings.Contains(then, "hotel") || !strings.Contains(then, "nine") || strings.Contains(then, "noon") || strings.Contains(then, "taxi") {
		t.Fatalf("as of seq %d: %s", flight.Seq, then)
	}
	// As of the edit: the new text, the hotel still there.
	mid := strings.Join(search("Lisbon", itoa(ed.Results[0].Seq)), "|")
	if !strings.Contains(mid, "hotel") || !strings.Contains(mid, "noon") || strings.Contains(mid, "nine") || strings.Contains(mid, "taxi") {
		t.Fatalf("as of seq %d: %s", ed.Results[0].Seq, mid)
	}
	// As of the head: today's answer.
	if head := strings.Join(search("Lisbon", itoa(later.Seq)), "|"); head != now {
		t.Fatalf("as of the head: %s, want %s", head, now)
	}
	// Context too.
	c, err := s.Context(ctx, ContextRequest{SearchRequest: SearchRequest{Text: "Lisbon hotel", AsOf: itoa(flight.Seq), Now: "2023-06-01T00:00:00Z"}, Format: "text"})
	if err != nil || !strings.Contains(c.Context, "hotel") {
		t.Fatalf("context as of 2: %v\n%s", err, c.Context)
	}
	// Bad as-of values are request errors.
	for _, bad := range []string{"0", "999", "yesterday-ish", "1990-01-01"} {
		if _, err := s.Search(ctx, SearchRequest{Text: "Lisbon", AsOf: bad}); !errors.Is(err, ErrBadRequest) {
			t.Errorf("as of %q: %v, want ErrBadRequest", bad, err)
		}
	}
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestAsOfSessionGet: a session and an item as they stood at a seq —
// before and after an edit and a tombstone (the rebuilt prefix), and
// before a later turn with nothing changed since (the live projections).
func TestAsOfSessionGet(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	remember := func(content string) EventResult {
		t.Helper()
		r, err := s.Remember(ctx, RememberRequest{Content: content, Session: "trip", Time: "2023-05-08T10:00:00Z", AllowDuplicate: true})
		if err != nil {
			t.Fatal(err)
		}
		return r.Results[0]
	}
	session := func(asOf string) string {
		t.Helper()
		r, err := s.Session(ctx, SessionRequest{ID: "trip", AsOf: asOf})
		if err != nil {
			t.Fatalf("session as of %q: %v", asOf, err)
		}
		var out []string
		for _, c := range r.Chunks {
			out = append(out, c.Content)
		}
		if r.Total != len(out) || r.Session.Chunks != len(out) {
			t.Fatalf("session as of %q: total %d, info %d, %d chunks", asOf, r.Total, r.Session.Chunks, len(out))
		}
		return strings.Join(out, "|")
	}
	get := func(id, asOf string) (bool, string) {
		t.Helper()
		r, err := s.Get(ctx, GetRequest{IDs: []string{id}, AsOf: asOf})
		if err != nil {
			t.Fatalf("get %s as of %q: %v", id, asOf, err)
		}
		return r.Items[0].Found, r.Items[0].Content
	}
	hotel := remember("The hotel in Lisbon is booked for June.")
	flight := remember("The flight to Lisbon leaves at nine.")
	taxi := remember("A taxi to the airport is ordered.")
	// Nothing changed yet: the live projections, later turns left out.
	if got := session(itoa(flight.Seq)); got != "The hotel in Lisbon is booked for June.|The flight to Lisbon leaves at nine." {
		t.Fatalf("session as of the flight: %s", got)
	}
	if found, _ := get(taxi.ID.String(), itoa(flight.Seq)); found {
		t.Fatal("the taxi, stored later, found as of the flight")
	}
	ed, err := s.Edit(ctx, EditRequest{ID: flight.ID.String(), Content: "The flight to Lisbon leaves at noon."})
	if err != nil {
		t.Fatal(err)
	}
	tomb, err := s.Tombstone(ctx, TombstoneRequest{Chunks: []string{hotel.ID.String()}})
	if err != nil {
		t.Fatal(err)
	}
	// Now: the hotel gone, the flight at noon.
	if got := session(""); strings.Contains(got, "hotel") || !strings.Contains(got, "noon") {
		t.Fatalf("session now: %s", got)
	}
	// Before the edit and the tombstone: as it was (the rebuilt prefix).
	if got := session(itoa(taxi.Seq)); got != "The hotel in Lisbon is booked for June.|The flight to Lisbon leaves at nine.|A taxi to the airport is ordered." {
		t.Fatalf("session as of the taxi: %s", got)
	}
	if found, content := get(flight.ID.String(), itoa(taxi.Seq)); !found || !strings.Contains(content, "nine") {
		t.Fatalf("flight as of the taxi: %v %q", found, content)
	}
	if found, _ := get(hotel.ID.String(), itoa(taxi.Seq)); !found {
		t.Fatal("the hotel, tombstoned later, not found as of the taxi")
	}
	// After the edit, before the tombstone.
	if found, content := get(flight.ID.String(), itoa(ed.Results[0].Seq)); !found || !strings.Contains(content, "noon") {
		t.Fatalf("flight as of the edit: %v %q", found, content)
	}
	if found, _ := get(hotel.ID.String(), itoa(ed.Results[0].Seq)); !found {
		t.Fatal("hotel as of the edit: not found")
	}
	// After the tombstone.
	if found, _ := get(hotel.ID.String(), itoa(tomb.Seq)); found {
		t.Fatal("hotel as of its tombstone: found")
	}
	if _, err := s.Session(ctx, SessionRequest{ID: "trip", AsOf: "0"}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("session as of 0: %v", err)
	}
}
