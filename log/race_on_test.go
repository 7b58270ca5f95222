//go:build race

package log

// raceEnabled: the race detector changes allocation counts (sync.Pool
// drops items at random), so allocation tests skip under it.
const raceEnabled = true
