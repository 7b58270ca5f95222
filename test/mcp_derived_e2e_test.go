package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/mcpserver"
)

// derivedRun is what mcp/derived.mjs prints.
type derivedRun struct {
	Stored      []string `json:"stored"`
	Consolidate struct {
		IsError bool                     `json:"isError"`
		Text    string                   `json:"text"`
		Data    mcpserver.ConsolidateOut `json:"data"`
	} `json:"consolidate"`
	Profile struct {
		IsError bool                 `json:"isError"`
		Text    string               `json:"text"`
		Data    mcpserver.ProfileOut `json:"data"`
	} `json:"profile"`
}

func runDerivedClient(t *testing.T, env []string, args ...string) derivedRun {
	t.Helper()
	node, client := tsClient(t)
	cmd := exec.Command(node, append([]string{filepath.Join(filepath.Dir(client), "derived.mjs")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("derived.mjs: %v\nstderr: %s", err, stderr.String())
	}
	var r derivedRun
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("derived.mjs output %q: %v\nstderr: %s", out, err, stderr.String())
	}
	return r
}

// The official TypeScript SDK drives uc_consolidate and uc_profile in the
// built `ucl mcp`: without a model the tool says so and stores nothing;
// with the recording fake model the supported facts are stored, the
// invented one refused, and uc_profile shows the facts with their
// source turns.
func TestMCPDerivedMemory(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	m := newFactModel(t)
	off := []string{"UCL_CONSOLIDATE_MODEL=", "UCL_CONSOLIDATE_ENDPOINT=", "UCL_DERIVED_STORE=1"}
	r := runDerivedClient(t, off, uclBin, "mcp", "--dir", dir)
	if len(r.Stored) != 2 || r.Stored[0] == "" || r.Stored[1] == "" {
		t.Fatalf("stored %v", r.Stored)
	}
	if !r.Consolidate.IsError || !strings.Contains(r.Consolidate.Text, "no model configured: nothing was sent or stored") {
		t.Fatalf("uc_consolidate without a model: %+v", r.Consolidate)
	}
	if r.Profile.IsError || len(r.Profile.Data.Profiles) != 0 || len(m.requests()) != 0 {
		t.Fatalf("without a model: profile %+v, %d model requests", r.Profile, len(m.requests()))
	}

	on := []string{"UCL_CONSOLIDATE_MODEL=fake-model", "UCL_CONSOLIDATE_ENDPOINT=" + m.srv.URL + "/v1", "UCL_CONSOLIDATE_API_KEY=" + e2eModelKey}
	r2 := runDerivedClient(t, on, uclBin, "mcp", "--dir", dir)
	c := r2.Consolidate
	if c.IsError || m.consolidations() != 1 || c.Data.StoredCount != 2 || c.Data.RefusedCount != 1 || !strings.Contains(c.Text, "Paris") {
		t.Fatalf("uc_consolidate with the fake model (%d requests): %+v", m.consolidations(), c)
	}
	if auth := m.requests()[0].Auth; auth != "Bearer "+e2eModelKey {
		t.Fatalf("model request auth %q", auth)
	}
	p := r2.Profile
	if p.IsError || len(p.Data.Profiles) != 1 || len(p.Data.Profiles[0].Facts) != 2 {
		t.Fatalf("uc_profile: %+v", p)
	}
	src := map[string]string{}
	for _, f := range p.Data.Profiles[0].Facts {
		src[f.Text] = strings.Join(f.Sources, ",")
	}
	if src["The user is allergic to peanuts."] != r.Stored[0] || src["The user prefers aisle seats."] != r.Stored[1] || strings.Contains(p.Text, "Paris") {
		t.Fatalf("profile facts %v (turns %v):\n%s", src, r.Stored, p.Text)
	}
}
