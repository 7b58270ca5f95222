package query

import (
	"time"

	"github.com/unlimitedcontext/ucl/internal/timephrase"
)

// TemporalMatch is one recognised time phrase and the window it stands for:
// content time in [Since, Until) in unix ms, 0 meaning open.
type TemporalMatch = timephrase.Match

// Temporal is the result of ParseTemporal.
type Temporal = timephrase.Parsed

// ParseTemporal finds time phrases in text and turns them into windows
// relative to now, using now's location for calendar days (see
// timephrase.Parse for the phrases). The result is a pure function of
// (text, now).
//
// Several phrases intersect, except when that leaves nothing: then the
// absolute phrases (a date with its year: a window that does not depend on
// now) anchor the relative ones, as a question means them. "What did she
// finish last week before 23 January, 2023?" asked in September means the
// week before January 23, not the one before September; "the Monday
// before July 24, 2023", "the last week of August 2023" likewise. The
// relative phrases are read again with now at the end of the absolute
// phrases' window (its start when it has no end) and intersect it; when
// even that leaves nothing ("last Friday, on 23 January": the day it was
// said), the absolute window alone stands. Before, such a question had no
// window at all.
func ParseTemporal(text string, now time.Time) Temporal {
	tp := timephrase.Parse(text, now)
	if len(tp.Matches) < 2 || tp.Since == 0 || tp.Until == 0 || tp.Until > tp.Since {
		return tp
	}
	// Absolute: the same window a thousand days later.
	later := now.AddDate(0, 0, 1000)
	var abs [2]int64
	nAbs := 0
	absolute := make([]bool, len(tp.Matches))
	for i, m := range tp.Matches {
		l := timephrase.Parse(m.Phrase, later)
		if len(l.Matches) != 1 || l.Since != m.Since || l.Until != m.Until {
			continue
		}
		absolute[i] = true
		if nAbs == 0 {
			abs = [2]int64{m.Since, m.Until}
		} else {
			abs[0], abs[1] = intersect(abs[0], abs[1], m.Since, m.Until)
		}
		nAbs++
	}
	if nAbs == 0 || nAbs == len(tp.Matches) || (abs[0] != 0 && abs[1] != 0 && abs[1] <= abs[0]) {
		return tp // no anchor, or the dates themselves disagree
	}
	at := abs[1]
	if at == 0 {
		at = abs[0]
	}
	if at == 0 {
		return tp
	}
	anchor := time.UnixMilli(at).In(now.Location())
	out := tp
	out.Matches = append([]TemporalMatch(nil), tp.Matches...)
	win := abs
	for i, m := range out.Matches {
		if absolute[i] {
			continue
		}
		r := timephrase.Parse(m.Phrase, anchor)
		if len(r.Matches) != 1 {
			continue
		}
		out.Matches[i].Since, out.Matches[i].Until = r.Since, r.Until
		win[0], win[1] = intersect(win[0], win[1], r.Since, r.Until)
	}
	if win[0] != 0 && win[1] != 0 && win[1] <= win[0] {
		win = abs
	}
	out.Since, out.Until = win[0], win[1]
	return out
}
