package log

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/unlimitedcontext/ucl/crypto"
)

// VerifyReport is the outcome of a full scan.
type VerifyReport struct {
	Events    uint64 `json:"events"`
	Head      uint64 `json:"head_seq"`
	HeadHash  Hash   `json:"-"`
	Decrypted bool   `json:"decrypted"` // bodies were opened with the vault key
	// Shredded counts events whose content a key rotation shredded (by
	// design unreadable; not damage).
	Shredded uint64 `json:"shredded"`
}

// VerifyDir scans a log directory without opening it for writing: every
// entry's CRC, header, seq and prev, and, with a keyring, every body's seal
// and encoding. It takes the store lock, so it never races a writer. It
// works on a log that Open refuses, and reports the first damage as a
// *CorruptionError naming the seq. progress may be nil.
func VerifyDir(ctx context.Context, dir string, kr *crypto.Keyring, progress func(seq uint64)) (VerifyReport, error) {
	lock, err := lockDir(dir)
	if err != nil {
		return VerifyReport{}, err
	}
	defer unlock(lock)
	var rk *Rekeys
	var mu sync.Mutex // verify's workers ask concurrently
	rekeys := func() (*Rekeys, error) {
		mu.Lock()
		defer mu.Unlock()
		if rk == nil {
			var err error
			if rk, err = buildRekeys(dir, kr, 0); err != nil {
				return nil, err
			}
		}
		return rk, nil
	}
	return verifyFiles(ctx, dir, kr, 0, rekeys, progress)
}

// Verify is VerifyDir for the process that has the log open (it holds the
// lock VerifyDir would take): the same scan of events 1..head, head as of
// the call, with the log's keys. Appends may run meanwhile: every event up
// to that head is complete on disk, and bytes past it are not judged (Open
// already judged the tail).
func (l *Log) Verify(ctx context.Context, progress func(seq uint64)) (VerifyReport, error) {
	head, _ := l.Head()
	if head == 0 {
		return VerifyReport{Decrypted: l.opts.Keys != nil}, nil
	}
	return verifyFiles(ctx, l.dir, l.opts.Keys, head, l.Rekeys, progress)
}

// verifyFiles scans the segment files for events 1..to (0: all, a torn
// tail included) as VerifyDir documents.
func verifyFiles(ctx context.Context, dir string, kr *crypto.Keyring, to uint64, rekeys func() (*Rekeys, error), progress func(seq uint64)) (VerifyReport, error) {
	var rep VerifyReport
	var prev Hash
	// Each event is hashed, and its body opened, on all cores; its seq and
	// prev are checked here in order, before an error of its own.
	work := func(raw []byte, st *decState, slot *Event) (*Event, error) {
		h, err := DecodeHeader(raw)
		if err != nil {
			return nil, err
		}
		ev := slot // fn below keeps nothing of it
		*ev = Event{Header: h, Hash: HashRaw(raw)}
		if kr != nil {
			st.hashed, st.checkOnly = true, true // hashed above; the body is dropped
			if _, err := decryptBody(kr, raw, rekeys, st); errors.Is(err, ErrShredded) {
				// Unreadable by design; its header and place in the chain
				// are checked all the same.
				ev.Body = &Shredded{Of: h.Type}
			} else if err != nil {
				return ev, err
			}
		}
		return ev, nil
	}
	err := pipeline(ctx, dir, 1, to, true, work, func(ev *Event, e *scanEntry, werr error) error {
		if ev.Seq != e.seq {
			return positioned(fmt.Errorf("%w: header says seq %d", ErrChainBroken, ev.Seq), e)
		}
		if ev.Prev != prev {
			return positioned(fmt.Errorf("%w: prev %s is not the hash of seq %d (%s)", ErrChainBroken, short(ev.Prev), e.seq-1, short(prev)), e)
		}
		if werr != nil {
			return nil
		}
		if _, ok := ev.Body.(*Shredded); ok {
			rep.Shredded++
		}
		prev = ev.Hash
		rep.Events, rep.Head, rep.HeadHash = e.seq, e.seq, prev
		if progress != nil && e.seq%4096 == 0 {
			progress(e.seq)
		}
		return nil
	})
	rep.Decrypted = kr != nil
	if to == 0 && errors.Is(err, ErrTorn) {
		// The scan stops at the first bytes that do not parse; whether
		// they are a torn write Open cuts or damage it refuses is Open's
		// diagnosis, given here as Open gives it.
		if derr := diagnoseTail(dir); derr != nil {
			err = derr
		}
	}
	if err != nil {
		return rep, fmt.Errorf("verify log: %w", err)
	}
	return rep, nil
}
