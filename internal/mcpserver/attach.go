package mcpserver

import (
	"io"

	"github.com/unlimitedcontext/ucl"
)

// OpenShared attaches to the owner of the store in dir or becomes it and
// serves it (ucl.OpenShared with Serve set): the Engine of `ucl mcp`.
// logw receives one line when ownership changes.
func OpenShared(dir string, opts ucl.Options, logw io.Writer) (*ucl.Shared, error) {
	return ucl.OpenShared(dir, opts, ucl.SharedOptions{Serve: true, Log: logw, Name: "ucl mcp"})
}

var _ Engine = (*ucl.Shared)(nil)
