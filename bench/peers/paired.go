package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
)

// pairedFigure measures durable appends op by op in lockstep: one ucl
// Append (sync durability), one etcd Save of one entry, one SQLite
// transaction of one INSERT, again and again, each timed. On a disk shared
// with other work the rounds of the figures above see different queues;
// here every ucl op has etcd and SQLite ops beside it under the same
// conditions, so the ratio of the medians compares the write paths; the
// same with batches of 256 (group durability). The rate ratio is the
// peer's median latency over ucl's (above 1: ucl is faster). Each log
// grows from empty, like the figures above. A fourth log takes the same
// appends with durability none, in the same lockstep: its median is
// ucl's part of a write before the fsync (preparing, chaining and
// writing the events): what a lone writer waits for besides the fsync.
func pairedFigure(root string, kr *crypto.Keyring, n, batch int) {
	dir := filepath.Join(root, "paired")
	os.RemoveAll(dir)
	l := openUCL(filepath.Join(dir, "ucl"), kr, log.Sync)
	if batch > 1 {
		l.Close()
		l = openUCL(filepath.Join(dir, "ucl"), kr, log.Group)
	}
	defer l.Close()
	ln := openUCL(filepath.Join(dir, "ucl-none"), kr, log.None)
	defer ln.Close()
	w := createEtcd(filepath.Join(dir, "etcd"))
	defer w.Close()
	db := openSQLite(filepath.Join(dir, "sqlite"))
	defer db.Close()
	defer os.RemoveAll(dir)
	es := entries(batch)
	var tu, te, ts, tn []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := l.AppendBatch(context.Background(), es); err != nil {
			fail(err)
		}
		t1 := time.Now()
		etcdSave(w, etcdEntries(uint64(i*batch+1), batch))
		t2 := time.Now()
		sqliteInsert(db, i*batch+1, batch)
		t3 := time.Now()
		if _, err := ln.AppendBatch(context.Background(), es); err != nil {
			fail(err)
		}
		t4 := time.Now()
		tu, te, ts, tn = append(tu, t1.Sub(t0)), append(te, t2.Sub(t1)), append(ts, t3.Sub(t2)), append(tn, t4.Sub(t3))
	}
	mu, me, ms, mn := medianDur(tu), medianDur(te), medianDur(ts), medianDur(tn)
	fmt.Printf("paired durable append, %3d a write: p50 ucl %v (%v of it before the fsync: durability none), etcd %v, SQLite %v; rate ucl/etcd %.2f, ucl/SQLite %.2f (%d writes each, in lockstep)\n",
		batch, mu.Round(time.Microsecond), mn.Round(time.Microsecond), me.Round(time.Microsecond), ms.Round(time.Microsecond),
		float64(me)/float64(mu), float64(ms)/float64(mu), n)
	summaryRow("durable append, %d a write, in lockstep | p50 %v (%v before the fsync: durability none) | etcd WAL p50 %v; SQLite p50 %v | rate ÷ etcd %.2f, ÷ SQLite %.2f (%d writes each)",
		batch, mu.Round(time.Microsecond), mn.Round(time.Microsecond), me.Round(time.Microsecond), ms.Round(time.Microsecond), float64(me)/float64(mu), float64(ms)/float64(mu), n)
}

func medianDur(x []time.Duration) time.Duration {
	s := append([]time.Duration(nil), x...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
