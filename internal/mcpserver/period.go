package mcpserver

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/query"
)

// isoRange matches "A..B", "A/B" and "A to B" (either side may be a date,
// an RFC 3339 time or unix ms; one side may be empty for "A.." / "..B").
var isoRange = regexp.MustCompile(`^\s*(\S*?)\s*(?:\.\.|/|\s+to\s+)\s*(\S*)\s*$`)

// parsePeriod turns a period phrase into [since, until) in unix ms (0 is
// open). It accepts every phrase query.ParseTemporal knows ("today", "this
// week", "last month", "May 2023", "in 2023", "2023-05-08", ...) and ISO
// ranges "2023-05-01..2023-05-31", "2023-05-01/2023-06-01" or
// "2023-05-01 to 2023-05-31". An end given as a bare date includes that day,
// because that is how people read "May 1 to May 31"; an end with a clock
// time is exclusive. Anything left over after the phrase is an error: a
// period that is only half understood would silently widen or narrow the
// answer.
func parsePeriod(s string, now time.Time) (since, until int64, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, fmt.Errorf("period is empty: give \"today\", \"this week\", \"last month\", \"May 2023\" or a range 2023-05-01..2023-05-31")
	}
	if m := isoRange.FindStringSubmatch(s); m != nil && (m[1] != "" || m[2] != "") && looksLikeTime(m[1]) && looksLikeTime(m[2]) {
		if m[1] != "" {
			if since, err = ingest.ParseTime(m[1]); err != nil {
				return 0, 0, fmt.Errorf("period start: %v", err)
			}
		}
		if m[2] != "" {
			if until, err = ingest.ParseTime(m[2]); err != nil {
				return 0, 0, fmt.Errorf("period end: %v", err)
			}
			if isDate(m[2]) {
				until += (24 * time.Hour).Milliseconds()
			}
		}
		if since != 0 && until != 0 && until <= since {
			return 0, 0, fmt.Errorf("period %q is empty: its end is not after its start", s)
		}
		return since, until, nil
	}
	t := query.ParseTemporal(s, now)
	if len(t.Matches) == 0 {
		return 0, 0, fmt.Errorf("cannot read period %q: use \"today\", \"yesterday\", \"this week\", \"last month\", \"May 2023\", \"in 2023\", \"3 days ago\" or a range 2023-05-01..2023-05-31", s)
	}
	if rest := strings.Trim(t.Text, " ,.;:"); rest != "" {
		return 0, 0, fmt.Errorf("cannot read period %q: %q is not part of a time phrase", s, rest)
	}
	if t.Since != 0 && t.Until != 0 && t.Until <= t.Since {
		return 0, 0, fmt.Errorf("period %q is empty", s)
	}
	return t.Since, t.Until, nil
}

var timeish = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?|\d{9,})$`)

func looksLikeTime(s string) bool { return s == "" || timeish.MatchString(s) }

func isDate(s string) bool { return len(s) == len("2006-01-02") && strings.Count(s, "-") == 2 }
