package projections

import "github.com/unlimitedcontext/ucl/log"

// EventReader is a Source that can also read one event by seq (*log.Log
// and the engine's other sources implement it). Projections that keep a
// reference by seq instead of a copy of an event's content read it back
// through it (the timelines).
type EventReader interface {
	EventAt(seq uint64) (*log.Event, error)
}
