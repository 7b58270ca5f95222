package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
)

// maxToolsListBytes bounds the JSON of tools/list: it is in the context of
// every conversation of every user before a single memory is read.
const maxToolsListBytes = 12 << 10

func TestToolsListSize(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools/list: %d tools, %d bytes of JSON", len(res.Tools), len(b))
	if len(b) > maxToolsListBytes {
		t.Errorf("tools/list is %d bytes of JSON; the bound is %d", len(b), maxToolsListBytes)
	}
}
