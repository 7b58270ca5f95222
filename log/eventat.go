package log

import "fmt"

// EventAt returns the decrypted event at seq: the raw bytes (CRC-checked)
// and the seal, as Raw and Decrypt check them. Projections that keep a
// reference by seq instead of a copy of the content (the timelines) read
// it back here. A read reads that one entry (the offset index, segidx.go),
// and concurrent reads do not wait for each other.
func (l *Log) EventAt(seq uint64) (*Event, error) {
	raw, err := l.Raw(seq)
	if err != nil {
		return nil, err
	}
	ev, err := l.Decrypt(raw)
	if err != nil {
		return nil, fmt.Errorf("read seq %d: %w", seq, err)
	}
	if ev.Seq != seq {
		return nil, &CorruptionError{Seq: seq, Offset: -1, Err: fmt.Errorf("%w: header says seq %d", ErrChainBroken, ev.Seq)}
	}
	return ev, nil
}
