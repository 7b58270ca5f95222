package projstd

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// Edits, tool calls and supersedes written to a real (encrypted) log and
// projected in many small catch-ups give every projection the digest of a
// single pass.
func TestSetDeterministicWithConversationModel(t *testing.T) {
	kr, _ := crypto.NewKeyring()
	l, err := log.Open(filepath.Join(t.TempDir(), "log"), log.Options{Keys: kr, Durability: log.None})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	evs := projtest.ConvEvents(12, 800)
	inc, err := Open(filepath.Join(t.TempDir(), "inc"), l, Options{Vectors: VectorOptions{GraphEvery: 150}})
	if err != nil {
		t.Fatal(err)
	}
	defer inc.Close()
	for i := 0; i < len(evs); i += 61 {
		var batch []log.Entry
		for _, ev := range evs[i:min(i+61, len(evs))] {
			batch = append(batch, log.Entry{ID: ev.ID, Time: ev.Time, Body: ev.Body})
		}
		if _, err := l.AppendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := inc.CatchUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	want, err := inc.Projector.Digests()
	if err != nil {
		t.Fatal(err)
	}
	full, err := Open(filepath.Join(t.TempDir(), "full"), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if err := full.CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got, err := full.Projector.Digests()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Names {
		if got[n] == "" || got[n] != want[n] {
			t.Fatalf("%s digest %s, incremental %s", n, got[n], want[n])
		}
	}
}
