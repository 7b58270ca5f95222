package ucl

import (
	"context"
	"testing"

	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// TestReadPanicResetsProjection: a read of a projection that panics on
// its files (a nil dereference in timelines, bleve's "error loading
// roaring bitmap" paths) no longer takes the process down or keeps
// failing: the projection is flagged, rebuilt from the log, and the read
// runs again. Here the first read of timelines panics inside the
// timelines package.
func TestReadPanicResetsProjection(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Append(ctx, AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	err := s.readProj(ctx, nil, func(set *projstd.Set, _ bool) error {
		calls++
		if calls == 1 {
			var tl *timelines.Timelines
			_, err := tl.Sessions() // a nil *Timelines: panics inside package timelines
			return err
		}
		_, err := set.Timelines.Sessions()
		return err
	})
	if err != nil || calls != 2 {
		t.Fatalf("read after a panic: %v (%d calls)", err, calls)
	}
	res, err := s.Sessions(ctx, SessionsRequest{})
	if err != nil || len(res.Sessions) != 2 {
		t.Fatalf("sessions after the rebuild: %+v %v", res, err)
	}
	// A panic that names no projection is a DamagedError for all of them.
	err = guardRead(func() error { panic("boom") })
	if name, ok := projections.Damaged(err); !ok || name != "" {
		t.Fatalf("guardRead: %v", err)
	}
}
