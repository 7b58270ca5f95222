//go:build !race

package ucl

const raceEnabled = false
