package ucl

import (
	"context"
	"errors"
	"fmt"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
)

// ErrCannotPay is returned by Push, before anything is signed, when an L1
// push costs more than the wallet holds. Two ways out: fund the wallet, or
// push through a bundler (PushRequest.Via ViaBundler), which pays for
// small uploads itself.
var ErrCannotPay = errors.New("the wallet cannot pay for this push")

// PushEstimate is what a push would upload and what it would cost
// (PushRequest.Estimate). Nothing is signed or posted to make it.
type PushEstimate struct {
	Mode          string `json:"mode"`
	Bundler       string `json:"bundler,omitempty"`
	PendingEvents uint64 `json:"pending_events"`
	PendingBytes  int64  `json:"pending_bytes"` // segment bytes to upload
	// Items is the uploads: segments, plus the checkpoint anchor.
	Items int `json:"items"`
	// Through a bundler: LargestItem is the biggest data item's size and
	// PaidItems how many are over the bundler's free size (FreeItemBytes),
	// which the bundler charges to credits.
	LargestItem   int `json:"largest_item_bytes,omitempty"`
	FreeItemBytes int `json:"free_item_bytes,omitempty"`
	PaidItems     int `json:"paid_items"`
	// In L1 and bundle mode: the fee in winston from the gateway's /price
	// (CostKnown false when it could not be asked), and the wallet's
	// balance (BalanceKnown false when it could not be asked).
	CostWinston    int64  `json:"cost_winston"`
	CostAR         string `json:"cost_ar"`
	CostKnown      bool   `json:"cost_known"`
	BalanceWinston int64  `json:"balance_winston"`
	BalanceAR      string `json:"balance_ar"`
	BalanceKnown   bool   `json:"balance_known"`
	// Enough is false only when both are known and the balance is short.
	Enough   bool   `json:"enough"`
	Sentence string `json:"sentence"`
}

// estimate cuts the pending events into segments as a push would (the
// segments a gateway already holds are not known here: it may upload fewer)
// and prices them.
func (s *Store) estimate(ctx context.Context, cl *arweave.Client, st *mirror.State, via, bundler string, segBytes int, head uint64) (*PushEstimate, error) {
	logID := s.st.Meta.LogIDBytes()
	sum, _, _, err := s.localSummary(st, logID)
	if err != nil {
		return nil, err
	}
	e := &PushEstimate{Mode: via, Bundler: bundler, Enough: true}
	var sizes []int
	if sum.CoveredSeq < head {
		e.PendingEvents = head - sum.CoveredSeq
		seger := mirror.NewSegmenter(logID, sum.CoveredHash, segBytes)
		add := func(seg *mirror.EncodedSegment) {
			if seg != nil {
				sizes = append(sizes, len(seg.Data))
				e.PendingBytes += int64(len(seg.Data))
			}
		}
		err := s.st.Log.Records(ctx, sum.CoveredSeq+1, head, func(r *log.Record) error {
			seg, err := seger.Add(mirror.Record{Seq: r.Header.Seq, Raw: r.Raw})
			add(seg)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("estimate push: %w", err)
		}
		seg, err := seger.Flush()
		if err != nil {
			return nil, fmt.Errorf("estimate push: %w", err)
		}
		add(seg)
	}
	if len(sizes) == 0 {
		e.Sentence = "nothing to push: every event is on Arweave"
		return e, nil
	}
	e.Items = len(sizes) + 1
	sizes = append(sizes, 1<<10) // the checkpoint anchor: a note and a proof, about 1 KiB
	if via == ViaBundler {
		e.FreeItemBytes = arweave.FreeItemBytes
		tags := mirror.SegmentMeta{Kind: mirror.KindSegment, LogID: logID, FirstSeq: head, LastSeq: head}.Tags()
		for _, n := range sizes {
			sz, err := arweave.DataItemSize(n, tags)
			if err != nil {
				return nil, err
			}
			e.LargestItem = max(e.LargestItem, sz)
			if sz > arweave.FreeItemBytes {
				e.PaidItems++
			}
		}
		cost := fmt.Sprintf("free: every item is under the bundler's free %d KiB", arweave.FreeItemBytes>>10)
		if e.PaidItems > 0 {
			cost = fmt.Sprintf("%d item(s) over the bundler's free %d KiB, paid with the bundler's credits (the bundler answers 402 without them)", e.PaidItems, arweave.FreeItemBytes>>10)
		}
		e.Sentence = fmt.Sprintf("%d events pending: %d bytes as %d data items through %s; %s; the wallet needs no AR",
			e.PendingEvents, e.PendingBytes, e.Items, bundler, cost)
		return e, nil
	}
	// L1 and bundle mode pay the gateway's fee per transaction.
	prices := map[int]int64{}
	e.CostKnown = true
	total := sizes
	if via == ViaBundle {
		total = []int{int(e.PendingBytes), 1 << 10}
	}
	for _, n := range total {
		p, ok := prices[n]
		if !ok {
			if p, err = cl.Price(ctx, n); err != nil {
				e.CostKnown = false
				break
			}
			prices[n] = p
		}
		e.CostWinston += p
	}
	if bal, err := cl.Balance(ctx, cl.Address()); err == nil {
		e.BalanceWinston, e.BalanceKnown = bal, true
	}
	e.CostAR, e.BalanceAR = arweave.FormatAR(e.CostWinston), arweave.FormatAR(e.BalanceWinston)
	e.Enough = !(e.CostKnown && e.BalanceKnown && e.BalanceWinston < e.CostWinston)
	cost := "its cost could not be asked"
	if e.CostKnown {
		cost = fmt.Sprintf("cost about %d winston (%s AR)", e.CostWinston, e.CostAR)
	}
	bal := "balance unknown"
	if e.BalanceKnown {
		bal = fmt.Sprintf("wallet %s holds %d winston (%s AR)", cl.Address(), e.BalanceWinston, e.BalanceAR)
	}
	e.Sentence = fmt.Sprintf("%d events pending: %d bytes as %d transactions (%s) at %s, %s; %s",
		e.PendingEvents, e.PendingBytes, len(total), via, cl.Gateway(), cost, bal)
	if !e.Enough {
		e.Sentence += "; not enough: fund the wallet, or push through a bundler (free under 100 KiB per item)"
	}
	return e, nil
}
