package log

import (
	"fmt"
	"os"
	"path/filepath"
)

// CutAfter makes the log in dir end at event seq, as Repair cuts a damaged
// tail: every cut byte is first saved in corruptDir (default
// dir/../corrupt), the log's files are cut and fsynced, and the head mark
// follows, since the loss is chosen. It is for events known never to have
// been acknowledged (a cluster owner's local tail the replicated stream
// refused). It takes the store lock. The report says what was cut; nil
// when the log ended at seq already.
func CutAfter(dir, corruptDir string, seq uint64, reason string) (*RepairReport, error) {
	if corruptDir == "" {
		corruptDir = filepath.Join(filepath.Dir(filepath.Clean(dir)), "corrupt")
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock(lock)
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		return nil, err
	}
	idx := 0
	for i, s := range segs {
		if s.first <= seq {
			idx = i
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, segs[idx].name))
	if err != nil {
		return nil, fmt.Errorf("cut log: read segment %s: %w", segs[idx].name, err)
	}
	ents, _ := parseSegment(b)
	off, hash := int64(0), Hash{}
	if seq >= segs[idx].first {
		k := int(seq - segs[idx].first)
		if k >= len(ents) {
			return nil, &CorruptionError{Seq: seq, Segment: segs[idx].name, Offset: -1, Err: fmt.Errorf("%w: the event to end at is not in the log", ErrLost)}
		}
		off = ents[k].end
		hash = HashRaw(ents[k].data[:len(ents[k].data)-crcSize])
	}
	// The last event in the files, for the report.
	last := seq
	if err := scanFiles(dir, seq+1, 0, func(s uint64, _ []byte) error { last = s; return nil }); err != nil {
		return nil, fmt.Errorf("cut log: %w", err)
	}
	p := &cutPlan{segs: segs, cutIdx: idx, cutOff: off, keep: seq, last: last}
	rep, err := p.apply(dir, corruptDir, reason)
	if err != nil {
		return nil, fmt.Errorf("cut log: %w", err)
	}
	if rep.Bytes == 0 {
		return nil, nil
	}
	if seq > 0 {
		// The kept event may have been inside a batch: it ends the log now.
		if err := markLastFinal(dir); err != nil {
			return rep, err
		}
	}
	m := headMark{Seq: seq, Hash: hash, Durable: true}
	if err := writeFileSync(filepath.Join(dir, headMarkFile), m.encode()); err != nil {
		return rep, err
	}
	return rep, syncDir(dir)
}
