package mcpserver

import (
	"strconv"
	"strings"
	"testing"
)

// TestRecallArgs: uc_query, uc_context, uc_get and uc_get_session take
// as_of (memory as it stood at a seq), uc_query and uc_context meta,
// diverse and tz, through the SDK client.
func TestRecallArgs(t *testing.T) {
	e := newEnv(t)
	fares, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "Lisbon fares are cheap in March.", Session: "trip", Role: "user",
		Meta: map[string]string{"project": "apollo"}, Time: "2023-05-08T10:00:00Z"})
	hotel, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "The Lisbon hotel is booked for June.", Session: "trip", Role: "user",
		Meta: map[string]string{"project": "zeus"}, Time: "2023-05-08T10:01:00Z"})
	before := strconv.FormatUint(hotel.Seqs[0], 10)
	ok[EditOut](e, "uc_edit", EditIn{ID: fares.IDs[0], Content: "Lisbon fares went up in March."})
	ok[StoreOut](e, "uc_store", StoreIn{Content: "Lisbon fares are cheap in March, said the agent.", Session: "trip", Role: "assistant", Time: "2023-05-09T10:00:00Z"})

	// meta: only the apollo item.
	out, _ := ok[QueryOut](e, "uc_query", QueryIn{Query: "Lisbon", Recall: Recall{Meta: map[string]string{"project": "apollo"}}})
	if len(out.Hits) != 1 || out.Hits[0].ID != fares.IDs[0] {
		t.Fatalf("meta project=apollo: %+v", out.Hits)
	}
	// as_of: the fares as they were before the edit, nothing stored later.
	out, _ = ok[QueryOut](e, "uc_query", QueryIn{Query: "Lisbon fares", Recall: Recall{AsOf: before}})
	if len(out.Hits) != 2 || !strings.Contains(out.Hits[0].Snippet, "cheap in March.") {
		t.Fatalf("query as of %s: %+v", before, out.Hits)
	}
	_, text := ok[ContextOut](e, "uc_context", ContextIn{Query: "Lisbon fares", Format: "text", Recall: Recall{AsOf: before}})
	if !strings.Contains(text, "cheap in March.") || strings.Contains(text, "went up") || strings.Contains(text, "agent") {
		t.Fatalf("context as of %s:\n%s", before, text)
	}
	got, _ := ok[GetOut](e, "uc_get", GetIn{IDs: []string{fares.IDs[0]}, AsOf: before})
	if len(got.Items) != 1 || got.Items[0].Content != "Lisbon fares are cheap in March." {
		t.Fatalf("get as of %s: %+v", before, got.Items)
	}
	if got, _ = ok[GetOut](e, "uc_get", GetIn{IDs: []string{fares.IDs[0]}}); got.Items[0].Content != "Lisbon fares went up in March." {
		t.Fatalf("get now: %+v", got.Items)
	}
	sess, _ := ok[SessionOut](e, "uc_get_session", SessionIn{Session: "trip", AsOf: strconv.FormatUint(fares.Seqs[0], 10)})
	if len(sess.Items) != 1 || sess.Items[0].Content != "Lisbon fares are cheap in March." {
		t.Fatalf("session as of %d: %+v", fares.Seqs[0], sess.Items)
	}
	// diverse: the near-copy of the best hit gives way to another.
	for i, c := range []string{"Porto trains are slow in winter.", "Porto trains are slow in winter!", "Porto buses are late in the winter months."} {
		ok[StoreOut](e, "uc_store", StoreIn{Content: c, Session: "porto" + strconv.Itoa(i), Role: "user", Time: "2023-04-01T10:00:00Z"})
	}
	hits := func(div bool) string {
		out, _ := ok[QueryOut](e, "uc_query", QueryIn{Query: "Porto winter", K: 2, Recall: Recall{Diverse: div}})
		var s []string
		for _, h := range out.Hits {
			s = append(s, h.Snippet)
		}
		return strings.Join(s, "|")
	}
	if plain, div := hits(false), hits(true); strings.Contains(plain, "buses") || !strings.Contains(div, "buses") {
		t.Fatalf("diverse: plain %q, diverse %q", plain, div)
	}
	// tz: "yesterday" is the day before in the zone asked for. Now is
	// 2023-05-10T12:00Z: in UTC yesterday is May 9, in Tokyo (+9) it is
	// 2023-05-08T15:00Z to 2023-05-09T15:00Z.
	ok[StoreOut](e, "uc_store", StoreIn{Content: "The ferry to Faro left.", Session: "faro", Role: "user", Time: "2023-05-09T20:00:00Z"})
	ok[StoreOut](e, "uc_store", StoreIn{Content: "The ferry from Faro came back.", Session: "faro", Role: "user", Time: "2023-05-08T16:00:00Z"})
	first := func(tz string) string {
		out, _ := ok[QueryOut](e, "uc_query", QueryIn{Query: "ferry Faro yesterday", K: 1, Recall: Recall{TZ: tz}})
		if len(out.Hits) != 1 {
			t.Fatalf("ferry in %s: %+v", tz, out.Hits)
		}
		return out.Hits[0].Snippet
	}
	if utc, tokyo := first("UTC"), first("Asia/Tokyo"); !strings.Contains(utc, "left") || !strings.Contains(tokyo, "came back") {
		t.Fatalf("yesterday in UTC: %q, in Tokyo: %q", utc, tokyo)
	}
	e.fails("uc_query", QueryIn{Query: "Lisbon", Recall: Recall{TZ: "Mars/Olympus"}}, "time zone")
	e.fails("uc_get", GetIn{IDs: []string{fares.IDs[0]}, AsOf: "999"}, "as-of")
}

// TestIndexPeriodMeta: uc_index and uc_period take meta, in a session or
// none, through the SDK client.
func TestIndexPeriodMeta(t *testing.T) {
	e := newEnv(t)
	a, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "Apollo budget review.", Session: "work", Role: "user",
		Meta: map[string]string{"project": "apollo"}, Time: "2023-05-08T10:00:00Z"})
	b, _ := ok[StoreOut](e, "uc_store", StoreIn{Content: "Apollo launch decided for June.", Kind: "knowledge",
		Meta: map[string]string{"project": "apollo"}, Time: "2023-05-08T11:00:00Z"})
	ok[StoreOut](e, "uc_store", StoreIn{Content: "Zeus budget review.", Session: "work", Role: "user",
		Meta: map[string]string{"project": "zeus"}, Time: "2023-05-08T12:00:00Z"})
	ok[StoreOut](e, "uc_store", StoreIn{Content: "A budget note without meta.", Kind: "knowledge", Time: "2023-05-08T13:00:00Z"})
	want := map[string]bool{a.IDs[0]: true, b.IDs[0]: true}

	idx, _ := ok[IndexOut](e, "uc_index", IndexIn{Query: "budget review launch", Meta: map[string]string{"project": "apollo"}})
	got := map[string]bool{}
	for _, it := range append(idx.Items, idx.Snippets...) {
		got[it.ID] = true
	}
	if idx.Matches != 2 || len(got) != 2 || !got[a.IDs[0]] || !got[b.IDs[0]] {
		t.Fatalf("uc_index meta project=apollo: %d matches %v, want %v", idx.Matches, got, want)
	}
	per, _ := ok[PeriodOut](e, "uc_period", PeriodIn{Period: "2023-05-08..2023-05-09", Meta: map[string]string{"project": "apollo"}})
	got = map[string]bool{}
	for _, it := range per.Items {
		got[it.ID] = true
	}
	if per.Total != 2 || len(got) != 2 || !got[a.IDs[0]] || !got[b.IDs[0]] {
		t.Fatalf("uc_period meta project=apollo: total %d %v, want %v", per.Total, got, want)
	}
	if per, _ = ok[PeriodOut](e, "uc_period", PeriodIn{Period: "2023-05-08..2023-05-09"}); per.Total != 4 {
		t.Fatalf("uc_period without meta: total %d, want 4", per.Total)
	}
	e.fails("uc_period", PeriodIn{Period: "2023-05-08..2023-05-09", Meta: map[string]string{"": "x"}}, "meta")
}

// TestServerTZDefault: a uc_query or uc_context call without tz reads its
// time phrases in the server's zone (Options.TZ, from [retrieval]
// timezone), not in UTC; a call's own tz still wins.
func TestServerTZDefault(t *testing.T) {
	// Now is 2023-05-10T12:00Z: in UTC yesterday is May 9, in Tokyo (+9)
	// it is 2023-05-08T15:00Z to 2023-05-09T15:00Z.
	for _, c := range []struct{ serverTZ, callTZ, want string }{
		{"", "", "left"},
		{"Asia/Tokyo", "", "came back"},
		{"Asia/Tokyo", "UTC", "left"},
	} {
		e := newEnvWith(t, Options{TZ: c.serverTZ})
		ok[StoreOut](e, "uc_store", StoreIn{Content: "The ferry to Faro left.", Session: "faro", Role: "user", Time: "2023-05-09T20:00:00Z"})
		ok[StoreOut](e, "uc_store", StoreIn{Content: "The ferry from Faro came back.", Session: "faro", Role: "user", Time: "2023-05-08T16:00:00Z"})
		out, _ := ok[QueryOut](e, "uc_query", QueryIn{Query: "ferry Faro yesterday", K: 1, Recall: Recall{TZ: c.callTZ}})
		if len(out.Hits) != 1 || !strings.Contains(out.Hits[0].Snippet, c.want) {
			t.Fatalf("uc_query, server zone %q, call zone %q: %+v, want %q first", c.serverTZ, c.callTZ, out.Hits, c.want)
		}
		cx, _ := ok[ContextOut](e, "uc_context", ContextIn{Query: "ferry Faro yesterday", Recall: Recall{TZ: c.callTZ}})
		if len(cx.Included) == 0 {
			t.Fatalf("uc_context, server zone %q, call zone %q: nothing included", c.serverTZ, c.callTZ)
		}
		first, _ := ok[GetOut](e, "uc_get", GetIn{IDs: cx.Included[:1]})
		if len(first.Items) != 1 || !strings.Contains(first.Items[0].Content, c.want) {
			t.Fatalf("uc_context, server zone %q, call zone %q: first included (rank order) %+v, want %q", c.serverTZ, c.callTZ, first.Items, c.want)
		}
	}
	e := newEnvWith(t, Options{TZ: "Mars/Olympus"})
	e.fails("uc_query", QueryIn{Query: "ferry"}, "time zone")
}
