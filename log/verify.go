package log

import (
	"context"
	"errors"
	"fmt"

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
	var rep VerifyReport
	var prev Hash
	var rk *Rekeys
	rekeys := func() (*Rekeys, error) {
		if rk == nil {
			var err error
			if rk, err = buildRekeys(dir, kr, 0); err != nil {
				return nil, err
			}
		}
		return rk, nil
	}
	err = scanFiles(dir, 1, 0, func(seq uint64, raw []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := verifyRaw(seq, raw, prev)
		if err != nil {
			return err
		}
		if kr != nil {
			// A shredded event is unreadable by design; its header and
			// place in the chain were checked above.
			if _, err := decryptResolved(kr, raw, rekeys); err != nil && !errors.Is(err, ErrShredded) {
				return err
			} else if err != nil {
				rep.Shredded++
			}
		}
		prev = r.Hash
		rep.Events, rep.Head, rep.HeadHash = seq, seq, prev
		if progress != nil && seq%4096 == 0 {
			progress(seq)
		}
		return nil
	})
	rep.Decrypted = kr != nil
	if err != nil {
		return rep, fmt.Errorf("verify log: %w", err)
	}
	return rep, nil
}
