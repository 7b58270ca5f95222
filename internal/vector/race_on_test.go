//go:build race

package vector

// raceOn: the race detector slows these scans about tenfold; the largest
// tests shrink under it (the logic they check does not depend on size).
const raceOn = true
