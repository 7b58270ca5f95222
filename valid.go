package ucl

import (
	"fmt"

	"github.com/unlimitedcontext/ucl/log"
)

// CheckRole returns an error wrapping ErrBadRequest unless role is one of
// log.Roles or empty: the one rule (log.CheckRole), which Append's JSONL
// parsing applies too. Every face calls it (or an engine method that
// does) so that a role is refused the same way everywhere.
func CheckRole(role string) error {
	if err := log.CheckRole(role); err != nil {
		return fmt.Errorf("%v: %w", err, ErrBadRequest)
	}
	return nil
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
