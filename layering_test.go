package ucl

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/unlimitedcontext/ucl"

// frontEnd reports whether a package is a front end of the engine: it may
// import the root package; nothing below it may.
func frontEnd(p string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
	return strings.HasPrefix(rel, "cmd/") || rel == "test" || strings.HasPrefix(rel, "test/") ||
		rel == "internal/mcpserver" || strings.HasPrefix(rel, "internal/mcpserver/") || rel == "internal/httpapi" ||
		rel == "internal/tenant" || rel == "internal/cluster" // serve many stores, on one machine or several
}

// forbiddenDeps lists, per package, packages it must not depend on
// (directly or not).
var forbiddenDeps = map[string][]string{
	"snapshot":        {"internal/store", "arweave"},
	"internal/vector": {"log", "projections"},
	// arweave is the transport: the mirror domain sits on top of it.
	"arweave":         {"internal/mirror", "log", "projections", "internal/store", "snapshot"},
	"internal/mirror": {"log", "projections", "internal/store", "snapshot"},
	// The features moved out of the engine work on what it hands them,
	// never on the store layout or the projections.
	"proof":  {"internal/store", "projections", "snapshot", "query"},
	"index":  {"internal/store", "snapshot", "arweave", "internal/mirror"},
	"rotate": {"projections", "snapshot", "internal/mirror", "query"},
	// Sharing works on its Env and the gateway the engine hands it; the
	// shared projections are the engine's.
	"share": {"internal/store", "snapshot", "query", "projections/projstd", "index", "rotate"},
}

// TestLayering asserts the import directions: front ends (cmd/..., the
// MCP server, test) -> ucl -> {query, projections, snapshot, arweave, log,
// crypto, internal}; nothing below the root package imports it or a front
// end, the CLI assembles no store itself, and the packages of
// forbiddenDeps stay clear of theirs.
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps=false", "-f", "{{.ImportPath}}|{{join .Deps \" \"}}|{{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	imports := map[string][]string{}
	for _, ln := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(ln, "|", 3)
		if len(f) != 3 {
			t.Fatalf("go list line %q", ln)
		}
		deps[f[0]], imports[f[0]] = strings.Fields(f[1]), strings.Fields(f[2])
	}
	if len(deps) < 10 || deps[module] == nil || deps[module+"/cmd/ucl"] == nil {
		t.Fatalf("go list found %d packages: %v", len(deps), deps)
	}
	for p, ds := range deps {
		if frontEnd(p) {
			continue
		}
		for _, d := range ds {
			if frontEnd(d) {
				t.Errorf("%s depends on the front end %s", p, d)
			}
			if d == module && p != module {
				t.Errorf("%s depends on the engine package %s: only front ends may", p, module)
			}
		}
	}
	// The CLI goes through the engine: no store assembly, no projection or
	// ingest plumbing of its own.
	for _, imp := range imports[module+"/cmd/ucl"] {
		switch strings.TrimPrefix(imp, module+"/") {
		case "internal/store", "internal/ingest", "internal/fsutil", "projections", "projections/timelines",
			"projections/fts", "projections/summary", "internal/vector", "arweave", "internal/mirror", "internal/snapgw":
			t.Errorf("cmd/ucl imports %s: that belongs in the engine (package ucl)", imp)
		}
	}
	// Lower packages keep their place: snapshot works on the Env the engine
	// hands it, never opens a store, and publishes through its Gateway
	// interface (internal/snapgw adapts the Arweave client); internal/vector knows
	// nothing of the log; arweave is transport only and internal/mirror, the
	// mirror domain over it, knows nothing of the log package.
	for p, forbidden := range forbiddenDeps {
		for _, d := range deps[module+"/"+p] {
			for _, f := range forbidden {
				if d == module+"/"+f {
					t.Errorf("%s depends on %s", p, f)
				}
			}
		}
		if deps[module+"/"+p] == nil {
			t.Errorf("go list does not know %s", p)
		}
	}
	found := false
	for _, imp := range imports[module+"/cmd/ucl"] {
		found = found || imp == module
	}
	if !found {
		t.Error("cmd/ucl does not import the engine")
	}
	// The engine mirrors through internal/mirror, which reaches Arweave
	// through its Gateway; only the engine (building the client and
	// wallet), the mirror, the snapshot adapter, the store (the wallet
	// file) and proof (verifying anchoring transactions) import the
	// transport.
	found = false
	for _, imp := range imports[module] {
		found = found || imp == module+"/internal/mirror"
	}
	if !found {
		t.Error("the engine does not import internal/mirror")
	}
	for p, imps := range imports {
		for _, imp := range imps {
			if imp != module+"/arweave" {
				continue
			}
			switch strings.TrimPrefix(strings.TrimPrefix(p, module), "/") {
			case "", "internal/mirror", "internal/snapgw", "internal/store",
				"proof": // checks anchoring transactions' signatures itself
			default:
				t.Errorf("%s imports arweave: go through the engine or internal/mirror", p)
			}
		}
	}
}
