//go:build !race

package vector

// raceOn: see race_on_test.go.
const raceOn = false
