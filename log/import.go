package log

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/tidwall/wal"
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
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
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
	var wb wal.Batch
	ids := make([]ID, len(raws))
	for i, raw := range raws {
		r, err := verifyRaw(seq+1, raw, prev)
		if err != nil {
			return fmt.Errorf("import event %d: %w", seq+1, err)
		}
		if l.opts.Keys != nil {
			if _, err := DecryptWith(l.opts.Keys, raw); err != nil {
				return fmt.Errorf("import event %d: %w", seq+1, err)
			}
		}
		seq, prev = seq+1, Hash(sha256.Sum256(raw))
		data := appendCRC(append(make([]byte, 0, len(raw)+crcSize), raw...))
		wb.Write(seq, data)
		ids[i] = r.Header.ID
		l.segBytes += uvarintLen(len(data)) + len(data)
	}
	cycled := l.segBytes >= l.opts.SegmentSize
	if cycled {
		l.segBytes = 0
	}
	err := l.writeBatch(&wb)
	if err == nil && cycled {
		err = syncDir(l.dir)
	}
	if err != nil {
		l.failed = fmt.Errorf("%w: %v", ErrFailed, err)
		return fmt.Errorf("import: write wal: %w", err)
	}
	l.mu.Lock()
	for i, id := range ids {
		l.ids[id] = seq - uint64(len(raws)) + uint64(i) + 1
	}
	l.head, l.headHash = seq, prev
	l.mu.Unlock()
	return nil
}
