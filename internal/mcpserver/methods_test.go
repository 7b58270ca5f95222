package mcpserver

import (
	"testing"

	"github.com/unlimitedcontext/ucl"
)

// Every tool is the face of one engine method (ucl.Methods names it) or a
// declared view over several; every method with a tool has it in the
// table, exposed. A tool added here or there without the other fails.
func TestToolsFollowMethodTable(t *testing.T) {
	inTable := map[string]bool{}
	for _, e := range Tools() {
		inTable[e.Name] = true
		m, isMethod := ucl.MethodByTool(e.Name)
		uses, isView := views[e.Name]
		switch {
		case isMethod && isView:
			t.Errorf("%s is both method %s's tool and a view", e.Name, m.Name)
		case isMethod:
			if !e.Exposed {
				t.Errorf("%s (method %s) is not exposed", e.Name, m.Name)
			}
		case isView:
			for _, name := range uses {
				if _, ok := ucl.MethodByName(name); !ok {
					t.Errorf("view %s uses %q, not a method", e.Name, name)
				}
			}
		default:
			t.Errorf("tool %s is neither a method's tool (ucl.Methods) nor a declared view", e.Name)
		}
	}
	for _, m := range ucl.Methods {
		if m.Tool != "" && !inTable[m.Tool] {
			t.Errorf("method %s names tool %s, which the server does not declare", m.Name, m.Tool)
		}
	}
	for name := range views {
		if !inTable[name] {
			t.Errorf("view %s is not in the tool table", name)
		}
	}
}
