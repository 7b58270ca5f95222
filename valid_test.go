package ucl

import (
	"errors"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

func TestCheckRoleAndKind(t *testing.T) {
	for _, r := range append([]string{""}, log.Roles...) {
		if err := CheckRole(r); err != nil {
			t.Errorf("CheckRole(%q): %v", r, err)
		}
	}
	for _, r := range []string{"wizard", "User", " user"} {
		if err := CheckRole(r); !errors.Is(err, ErrBadRequest) {
			t.Errorf("CheckRole(%q): %v, want ErrBadRequest", r, err)
		}
	}
	for _, k := range []string{"conversation", "document", "knowledge", "tool_call"} {
		if err := CheckKind(k); err != nil {
			t.Errorf("CheckKind(%q): %v", k, err)
		}
	}
	for _, k := range []string{"", "mail", "Document"} {
		if err := CheckKind(k); !errors.Is(err, ErrBadRequest) {
			t.Errorf("CheckKind(%q): %v, want ErrBadRequest", k, err)
		}
	}
}
