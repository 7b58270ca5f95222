package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/internal/mcpserver"
)

var mcpCommand = &cli.Command{
	Name:  "mcp",
	Usage: "be the memory of an MCP client (Claude Code, Cursor, Windsurf, ...) over stdio",
	Description: `Speaks the Model Context Protocol on stdin/stdout; the client spawns it.
Tools: ` + mcpToolNames() + `.
Resources: uc://sessions/{id}, uc://documents/{id}, uc://context/auto.

The first ucl mcp (or ucl daemon) on a store owns it and serves it on
DIR/ucl.sock; the others, and every ucl command run meanwhile, attach to it,
so several editors and a terminal share one memory. When the owner exits,
the next call of another ucl mcp takes over. Each call is logged to stderr.
A line that is not a JSON-RPC message is answered with the JSON-RPC error
(-32700 parse error, -32600 invalid request) and the session goes on.

  claude mcp add ucl -- ucl mcp --dir ~/.ucl
  (see docs/mcp.md for Cursor, Windsurf and other clients)`,
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("ucl mcp takes no arguments; the client sends requests on stdin", "unexpected argument %q", c.Args().First())
		}
		tz, err := serverTZ(fileConfig)
		if err != nil {
			return err
		}
		eng, err := mcpserver.OpenShared(storeDir(c), engineOptions(c), c.App.ErrWriter)
		if err != nil {
			return openError(err)
		}
		srv := mcpserver.New(eng, mcpserver.Options{Version: version, Log: c.App.ErrWriter, TZ: tz})
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		runErr := srv.Run(ctx, mcpserver.StdioTransport(c.App.Reader, c.App.Writer, 0))
		// The client closing stdin or a signal is the normal end.
		if errors.Is(runErr, context.Canceled) || errors.Is(runErr, io.EOF) {
			runErr = nil
		}
		return errors.Join(runErr, eng.Close())
	},
}

// mcpToolNames lists the exposed tools, from the server's tool table,
// wrapped as the rest of the help text.
func mcpToolNames() string {
	var b strings.Builder
	col := len("Tools: ")
	for _, t := range mcpserver.Tools() {
		if !t.Exposed {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(",")
			col++
			if col+len(t.Name)+2 > 76 {
				b.WriteString("\n")
				col = 0
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString(t.Name)
		col += len(t.Name)
	}
	return b.String()
}
