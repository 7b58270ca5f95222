package ucl

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestSessionPages checks pages and Last against slices of the whole
// session, and the bad combinations.
func TestSessionPages(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for i := 0; i < 7; i++ {
		if _, err := s.Remember(ctx, RememberRequest{Session: "s1", Content: fmt.Sprintf("turn %d of the talk", i),
			Time: fmt.Sprintf("2024-01-02T03:04:%02dZ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Session(ctx, SessionRequest{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != 7 || len(all.Chunks) != 7 {
		t.Fatalf("whole session: total %d, %d chunks", all.Total, len(all.Chunks))
	}
	for _, tc := range []struct {
		req      SessionRequest
		from, to int
	}{
		{SessionRequest{Offset: 2, Limit: 3}, 2, 5},
		{SessionRequest{Offset: 5}, 5, 7},
		{SessionRequest{Offset: 9}, 7, 7},
		{SessionRequest{Limit: 10}, 0, 7},
		{SessionRequest{Last: 3}, 4, 7},
		{SessionRequest{Last: 7}, 0, 7},
		{SessionRequest{Last: 20}, 0, 7},
	} {
		tc.req.ID = "s1"
		got, err := s.Session(ctx, tc.req)
		if err != nil {
			t.Fatalf("%+v: %v", tc.req, err)
		}
		if got.Total != 7 || !reflect.DeepEqual(got.Chunks, all.Chunks[tc.from:tc.to]) || got.Session.ID != "s1" {
			t.Errorf("%+v: total %d, chunks %v, want chunks %d..%d", tc.req, got.Total, got.Chunks, tc.from, tc.to)
		}
	}
	for _, req := range []SessionRequest{{Last: -1}, {Last: 2, Offset: 1}, {Last: 2, Limit: 1}, {Offset: -1}} {
		req.ID = "s1"
		if _, err := s.Session(ctx, req); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: error %v, want ErrBadRequest", req, err)
		}
	}
}
