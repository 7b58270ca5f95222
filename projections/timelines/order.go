package timelines

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// The session order index is one flat bucket (version 4):
//
//	order  uvarint(len(session)) ‖ session ‖ ordKey(time, seq) → indexValue
//
// Version 3 kept one sub-bucket per session: each session of more than a
// few turns then took a page of its own, half empty on average, which was
// a quarter of the file at 50K turns in 2,400 sessions. The length prefix
// keeps one session's keys contiguous and apart from every other's.

func orderPrefix(session string) []byte {
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(session)+16), uint64(len(session)))
	return append(b, session...)
}

func orderKey(session string, ok []byte) []byte { return append(orderPrefix(session), ok...) }

// sessCursor walks one session's order entries; the keys it returns are
// the ordKeys (the session prefix cut off), nil past either end.
type sessCursor struct {
	c      *bolt.Cursor
	prefix []byte
}

func sessionCursor(tx *bolt.Tx, session string) *sessCursor {
	return &sessCursor{c: tx.Bucket(bOrder).Cursor(), prefix: orderPrefix(session)}
}

func (s *sessCursor) cut(k, v []byte) ([]byte, []byte) {
	if k == nil || !bytes.HasPrefix(k, s.prefix) {
		return nil, nil
	}
	return k[len(s.prefix):], v
}

func (s *sessCursor) First() ([]byte, []byte) { return s.cut(s.c.Seek(s.prefix)) }
func (s *sessCursor) Next() ([]byte, []byte)  { return s.cut(s.c.Next()) }
func (s *sessCursor) Prev() ([]byte, []byte)  { return s.cut(s.c.Prev()) }

// Seek goes to the first entry at or after ordKey ok.
func (s *sessCursor) Seek(ok []byte) ([]byte, []byte) {
	return s.cut(s.c.Seek(append(append([]byte{}, s.prefix...), ok...)))
}

// Last goes to the session's last entry: the one before the first key
// past the prefix (ordKeys are 16 bytes, so prefix ‖ 17 × 0xff is past
// all of them).
func (s *sessCursor) Last() ([]byte, []byte) {
	end := append(append([]byte{}, s.prefix...), bytes.Repeat([]byte{0xff}, 17)...)
	if k, _ := s.c.Seek(end); k == nil {
		return s.cut(s.c.Last())
	}
	return s.cut(s.c.Prev())
}
