package ucl

import (
	"fmt"

	"github.com/unlimitedcontext/ucl/log"
)

// Roles are the roles a stored item may have: the chat roles of the
// clients ucl stores for (OpenAI's, MCP's). The empty role is allowed
// where a request has a default for it.
var Roles = []string{"user", "assistant", "system", "developer", "tool"}

// CheckRole returns an error wrapping ErrBadRequest unless role is one of
// Roles or empty. Every face calls it (or an engine method that does) so
// that a role is refused the same way everywhere.
func CheckRole(role string) error {
	if role == "" {
		return nil
	}
	for _, r := range Roles {
		if r == role {
			return nil
		}
	}
	return fmt.Errorf("role %q: want user, assistant, system, developer or tool: %w", role, ErrBadRequest)
}

// CheckKind returns an error wrapping ErrBadRequest unless kind is one of
// the item kinds (conversation, document, knowledge, tool_call). Unlike
// log.ParseKind it refuses the empty kind: in a filter, "" means nothing.
func CheckKind(kind string) error {
	if _, err := log.ParseKind(kind); err != nil || kind == "" {
		return fmt.Errorf("kind %q: want conversation, document, knowledge or tool_call: %w", kind, ErrBadRequest)
	}
	return nil
}
