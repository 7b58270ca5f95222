package main

import (
	"encoding/json"
	"io"

	"github.com/unlimitedcontext/ucl/log"
)

// lineEncoder writes events as JSONL.
type lineEncoder struct{ enc *json.Encoder }

func newLineEncoder(w io.Writer) *lineEncoder {
	e := json.NewEncoder(w)
	e.SetEscapeHTML(false)
	return &lineEncoder{enc: e}
}

func (l *lineEncoder) encode(e *log.Event) error { return l.enc.Encode(e) }

// encodeTombstoned prints a store event whose chunk was tombstoned: header
// and targeting fields, no content or meta.
func (l *lineEncoder) encodeTombstoned(e *log.Event, by uint64) error {
	s := e.Store()
	return l.enc.Encode(map[string]any{
		"seq": e.Seq, "time": log.FormatTime(e.Time), "type": e.Type.String(), "id": e.ID.String(),
		"hash": e.Hash.String(), "prev": e.Prev.String(), "chunk_id": s.ChunkID, "session": s.Session,
		"kind": s.Kind, "role": s.Role, "tombstoned": true, "tombstoned_by_seq": by,
	})
}
