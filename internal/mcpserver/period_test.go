package mcpserver

import (
	"strings"
	"testing"
	"time"
)

func TestParsePeriod(t *testing.T) {
	ms := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	for _, c := range []struct {
		in           string
		since, until string // "" is open
	}{
		{"today", "2023-05-10T00:00:00Z", "2023-05-11T00:00:00Z"},
		{"this week", "2023-05-08T00:00:00Z", "2023-05-15T00:00:00Z"},
		{"last month", "2023-04-01T00:00:00Z", "2023-05-01T00:00:00Z"},
		{"May 2023", "2023-05-01T00:00:00Z", "2023-06-01T00:00:00Z"},
		{"in 2022", "2022-01-01T00:00:00Z", "2023-01-01T00:00:00Z"},
		{"2023-05-01..2023-05-31", "2023-05-01T00:00:00Z", "2023-06-01T00:00:00Z"},
		{"2023-05-01/2023-06-01T00:00:00Z", "2023-05-01T00:00:00Z", "2023-06-01T00:00:00Z"},
		{"2023-05-01 to 2023-05-02", "2023-05-01T00:00:00Z", "2023-05-03T00:00:00Z"},
		{"2023-05-01..", "2023-05-01T00:00:00Z", ""},
		{"..2023-05-01", "", "2023-05-02T00:00:00Z"},
	} {
		s, u, err := parsePeriod(c.in, now)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		var ws, wu int64
		if c.since != "" {
			ws = ms(c.since)
		}
		if c.until != "" {
			wu = ms(c.until)
		}
		if s != ws || u != wu {
			t.Errorf("%q: [%s, %s), want [%s, %s)", c.in, fmtMS(s), fmtMS(u), c.since, c.until)
		}
	}
	for in, want := range map[string]string{
		"":                       "period is empty",
		"soon":                   "cannot read period",
		"today and pizza":        `"and pizza" is not part of a time phrase`,
		"2023-05-09..2023-05-01": "end is not after its start",
		"2023-02-30..2023-03-01": "period start",
		"..":                     "cannot read period",
	} {
		if _, _, err := parsePeriod(in, now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

// FuzzParsePeriod: any input gives a non-empty window or an error, never a
// panic.
func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"today", "last week", "May 2023", "2023-05-01..2023-05-31", "..", "1/2", "in 2023 to 2024", "3 days ago"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		since, until, err := parsePeriod(s, now)
		if err == nil && since != 0 && until != 0 && until <= since {
			t.Fatalf("%q: empty window [%d, %d) without an error", s, since, until)
		}
	})
}
