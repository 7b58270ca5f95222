package snapshot

import (
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// Internals for the external tests (publish_test.go runs in package
// snapshot_test so that it can use the real gateway adapter, which
// imports this package).
var (
	NewTestEnv     = newTestEnv
	NewLogID       = newLogID
	RebuildDigests = rebuildDigests
	SameDigests    = sameDigests
	SHA256Hex      = sha256Hex
	PartUpload     = partUpload
)

// TestEnv is a real log with projections and snapshots directories.
type TestEnv = testEnv

// AppendEvents appends evs to the test log.
func (te *testEnv) AppendEvents(t testing.TB, evs []*log.Event) { te.appendEvents(t, evs) }
