package log

import (
	"context"
	"fmt"
)

// Import appends events that already exist elsewhere (a rebuild from
// Arweave, a copy of another device's log) byte for byte, so their hashes
// and the chain stay those of the source. Each raw (header ‖ body) must
// continue the log: seq = head+1, prev = the head's hash. With keys, each
// body's seal is checked too, so a wrong vault key or a forged event is
// refused before anything is written. The whole call is one write and one
// fsync (per the durability mode); on error nothing is written.
func (l *Log) Import(ctx context.Context, raws [][]byte) error {
	if len(raws) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	defer l.exclusive()()
	l.qmu.Lock()
	closed := l.closed
	l.qmu.Unlock()
	if closed {
		return ErrClosed
	}
	if l.failed != nil {
		return l.failed
	}
	seq, prev := l.Head()
	all := make([]pending, 0, len(raws))
	rekeyed := false
	// One batch-key unwrap per append request, not per event; verifyRaw
	// hashed; the bodies are only checked.
	st := decState{hashed: true, checkOnly: true}
	for _, raw := range raws {
		r, err := verifyRaw(seq+1, raw, prev)
		if err != nil {
			return fmt.Errorf("import event %d: %w", seq+1, err)
		}
		// An event of an epoch a rotation wiped is checked when read, through
		// the rekey events that follow it (or found shredded); any other
		// event's seal is checked now.
		if kr := l.opts.Keys; kr != nil && (kr.Has(r.Header.KeyEpoch) || r.Header.KeyEpoch >= kr.Current()) {
			if _, err := decryptBody(kr, raw, nil, &st); err != nil {
				return fmt.Errorf("import event %d: %w", seq+1, err)
			}
		}
		if r.Header.Type == TypeRekey {
			rekeyed = true
		}
		seq, prev = seq+1, r.Hash
		data := appendCRC(append(make([]byte, 0, len(raw)+crcSize), raw...), false)
		all = append(all, pending{data: data, id: r.Header.ID, seq: seq, hash: r.Hash})
	}
	if err := l.writeAll(all); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	l.advance(all, seq, prev)
	if rekeyed {
		l.forgetRekeys()
	}
	return nil
}
