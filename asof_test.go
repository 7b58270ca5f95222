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
