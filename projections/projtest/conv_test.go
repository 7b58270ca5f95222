package projtest

import (
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// The conversation stream holds every new shape several times, so the
// suites that run it test something.
func TestConvEventsHoldTheConversationModel(t *testing.T) {
	var edits, rechunks, removes, tools, supersedes int
	for _, ev := range ConvEvents(20260101, SuiteEvents) {
		switch b := ev.Body.(type) {
		case *log.Edit:
			edits++
			if b.Store.ChunkParent != "" {
				rechunks++
			}
			removes += len(b.Removes)
		case *log.Store:
			if b.Tool != nil {
				tools++
			}
			supersedes += len(b.Supersedes)
		}
	}
	if edits < 10 || rechunks < 3 || removes < 2 || tools < 10 || supersedes < 5 {
		t.Fatalf("edits %d (re-chunks %d, removes %d), tool calls %d, supersedes %d", edits, rechunks, removes, tools, supersedes)
	}
}
