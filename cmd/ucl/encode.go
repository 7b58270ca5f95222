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
	return l.enc.Encode(struct {
		Seq        uint64   `json:"seq"`
		Time       string   `json:"time"`
		Type       string   `json:"type"`
		ID         log.ID   `json:"id"`
		Hash       log.Hash `json:"hash"`
		Prev       log.Hash `json:"prev"`
		ChunkID    string   `json:"chunk_id"`
		Session    string   `json:"session,omitempty"`
		Role       string   `json:"role,omitempty"`
		Kind       log.Kind `json:"kind"`
		Tombstoned bool     `json:"tombstoned"`
		By         uint64   `json:"tombstoned_by_seq"`
	}{e.Seq, log.FormatTime(e.Time), e.Type.String(), e.ID, e.Hash, e.Prev, s.ChunkID, s.Session, s.Role, s.Kind, true, by})
}
