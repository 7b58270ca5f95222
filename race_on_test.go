//go:build race

package ucl

// raceEnabled: this test binary runs under the race detector, where the
// largest sizes of a few scale tests wait for UCL_TEST_LARGE (see
// largeTests).
const raceEnabled = true
