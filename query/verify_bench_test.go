package query_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/query"
)

// BenchmarkSearchCheckedAgainstLog measures what checking the returned
// chunks against the log costs a BM25 search (k=10) over 50K chunks in a
// real encrypted log (8 MiB segments): sub-benchmarks "unchecked",
// "checked" (the default check: content sum and the log's id index) and
// "full" (each returned event also read back from the log).
func BenchmarkSearchCheckedAgainstLog(b *testing.B) {
	kr, err := crypto.NewKeyring()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	l, err := log.Open(filepath.Join(dir, "log"), log.Options{Keys: kr, Durability: log.None})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	evs := projtest.Generate(projtest.Config{Seed: 42, N: 50000, StoresOnly: true, Vocab: 30000})
	for i := 0; i < len(evs); i += 1000 {
		var es []log.Entry
		for _, ev := range evs[i:min(i+1000, len(evs))] {
			es = append(es, log.Entry{ID: ev.ID, Time: ev.Time, Body: ev.Body})
		}
		if _, err := l.AppendBatch(ctx, es); err != nil {
			b.Fatal(err)
		}
	}
	set, err := projstd.Open(filepath.Join(dir, "p"), l, projstd.Options{Only: []string{"timelines", "fts"}})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	if err := set.CatchUp(ctx, nil); err != nil {
		b.Fatal(err)
	}
	now := time.UnixMilli(projtest.BaseTime + 1e12)
	for _, name := range []string{"unchecked", "checked", "full"} {
		src := query.Sources{Chunks: set.Timelines, Text: set.FTS}
		if name != "unchecked" {
			src.Log, src.FullCheck = l, name == "full"
		}
		e := query.New(src, query.Options{})
		b.Run(name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := e.Search(ctx, query.Request{Text: benchQueries[i%len(benchQueries)], K: 10, Now: now, Mode: query.ModeBM25, NoTemporal: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
