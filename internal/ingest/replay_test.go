package ingest

import (
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

const replaySample = `{"seq":1,"time":"2026-11-27T09:25:20.031Z","type":"store","id":"999bb16a8d5258d088afb8efcf24564f","hash":"1b01fecc8ea29b02676c01dd788078da74ae293210d8d30acacf391f22b37c0d","prev":"0000000000000000000000000000000000000000000000000000000000000000","chunk_id":"c1","session":"trip","role":"user","kind":"conversation","content_time":"2023-05-08T10:00:00.000Z","content":"Cheap Lisbon fares","meta":{"project":"apollo"}}
{"seq":2,"time":"2026-11-27T09:25:20.031Z","type":"store","id":"3a56825958ab7bae8897becf0df57479","hash":"2b525fe011bf8ebdc2e49bc21a2d3f5a7f52d5cdcb8e32c0f223fe703c7707a4","prev":"1b01fecc8ea29b02676c01dd788078da74ae293210d8d30acacf391f22b37c0d","chunk_id":"sec","session":"x","kind":"conversation","tombstoned":true,"tombstoned_by_seq":5}
{"seq":3,"time":"2026-11-27T09:25:20.031Z","type":"store","id":"f9b0b55e6a7fba773fed02a6214524b3","hash":"5af56d293d81dc6a9fd3e6be3bf5bc8fe648cbf5358707b0bf7356314f0d3d69","prev":"2b525fe011bf8ebdc2e49bc21a2d3f5a7f52d5cdcb8e32c0f223fe703c7707a4","chunk_id":"w1","session":"trip","role":"tool","kind":"tool_call","content_time":"2023-05-08T10:02:00.000Z","content":"22C","tool":{"name":"get_weather","args":"{\"city\":\"Lisbon\"}","status":"ok"}}
{"seq":4,"time":"2026-11-27T09:25:23.085Z","type":"edit","id":"222191267dccd6aaec184b346ba81a9a","hash":"cacbc63288492500497eec1edaf2ac23ebe360e7a8aefa16f71381b47f283c08","prev":"5af56d293d81dc6a9fd3e6be3bf5bc8fe648cbf5358707b0bf7356314f0d3d69","target":"c1","prev_seq":1,"chunk_id":"c1","session":"trip","role":"user","kind":"conversation","content_time":"2023-05-08T10:00:00.000Z","content":"Cheap Lisbon fares in March"}
{"seq":5,"time":"2026-11-27T09:25:23.325Z","type":"tombstone","id":"3e58b22061ef10a366c7203b8b1c6c9c","hash":"13d4d4865fe6052d32d0028d15e1c6a6d0271f912e24dc43d125ee872bcbe77c","prev":"a2ec9513a0b8f0bad00721e5f62a59e721c94a9047379791afa19fba48ce0931","chunks":["sec"],"reason":"test"}
{"seq":6,"time":"2026-11-27T09:25:24.000Z","type":"share_grant","id":"4e58b22061ef10a366c7203b8b1c6c9c","hash":"23d4d4865fe6052d32d0028d15e1c6a6d0271f912e24dc43d125ee872bcbe77c","prev":"13d4d4865fe6052d32d0028d15e1c6a6d0271f912e24dc43d125ee872bcbe77c","grantee":"abc"}
`

// Replay lines become the events they describe; the withheld store, the
// tombstone of it alone and the share grant are skipped; the edit's
// prev_seq is renumbered past the skipped line before it.
func TestReplayLines(t *testing.T) {
	es, allow, err := ReadAllFlags(strings.NewReader(replaySample), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || len(allow) != 3 || !allow[0] {
		t.Fatalf("%d entries %v", len(es), allow)
	}
	s := es[0].Body.(*log.Store)
	if es[0].ID.String() != "999bb16a8d5258d088afb8efcf24564f" || es[0].Time != 1795771520031 || s.ChunkID != "c1" || s.Meta["project"] != "apollo" || s.Time != 1683540000000 {
		t.Fatalf("store: %+v %+v", es[0], s)
	}
	if w := es[1].Body.(*log.Store); w.Tool == nil || w.Tool.Args != `{"city":"Lisbon"}` || w.Kind != log.KindToolCall {
		t.Fatalf("tool call: %+v", w)
	}
	if ed := es[2].Body.(*log.Edit); ed.Target != "c1" || ed.Prev != 1 || ed.Store.Content != "Cheap Lisbon fares in March" {
		t.Fatalf("edit: %+v", ed)
	}
	// The edit of a chunk after the skipped line names its new seq.
	in := strings.Replace(replaySample, `"prev_seq":1`, `"prev_seq":3`, 1)
	es, err = ReadAll(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ed := es[2].Body.(*log.Edit); ed.Prev != 2 {
		t.Fatalf("prev_seq 3 past one skipped line: %d, want 2", ed.Prev)
	}
	// A --raw line cannot be appended.
	raw := `{"seq":1,"time":"2026-11-27T09:25:20.031Z","type":"store","id":"999bb16a8d5258d088afb8efcf24564f","key_epoch":0,"hash":"1b01fecc8ea29b02676c01dd788078da74ae293210d8d30acacf391f22b37c0d","prev":"0000000000000000000000000000000000000000000000000000000000000000","body_bytes":120}`
	if _, err := ReadAll(strings.NewReader(raw), Options{}); err == nil || !strings.Contains(err.Error(), "--raw") {
		t.Fatalf("raw line: %v", err)
	}
}

func FuzzReplayLine(f *testing.F) {
	for _, l := range strings.Split(strings.TrimSpace(replaySample), "\n") {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := ParseLine(b, 1, Options{})
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Body == nil {
				t.Fatalf("entry without a body from %q", b)
			}
		}
	})
}
