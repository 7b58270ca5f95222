package ucl

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
)

// A read that reaches a store after Close (a request in flight while a
// server closes the store) opens no projection set: one opened then
// would stay open with its bolt files locked, and the next Open of the
// store in the same process would wait on those locks forever (seen in a
// cluster node that dropped and reopened a store under load).
func TestReadAfterCloseOpensNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Init(dir, InitOptions{Options: Options{Warn: func(string) {}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Remember(ctx, RememberRequest{Content: "a fact about plums"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Results[0].ID.String()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, GetRequest{IDs: []string{id}}); !errors.Is(err, log.ErrClosed) {
		t.Fatalf("a read on a closed store: %v, want log.ErrClosed", err)
	}
	s2, err := Open(dir, Options{Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	done := make(chan error, 1)
	go func() {
		r, err := s2.Get(ctx, GetRequest{IDs: []string{id}})
		if err == nil && (len(r.Items) != 1 || !r.Items[0].Found) {
			err = errors.New("the fact is not found")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a read after reopening: %v", err)
		}
	case <-time.After(60 * time.Second): // a hang, not a slow read
		t.Fatal("a read after reopening waits on projection files the closed store still holds")
	}
}
