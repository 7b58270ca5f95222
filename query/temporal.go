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
func ParseTemporal(text string, now time.Time) Temporal { return timephrase.Parse(text, now) }
