package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/internal/mcpserver"
)

var mcpCommand = &cli.Command{
	Name:  "mcp",
	Usage: "be the memory of an MCP client (Claude Code, Cursor, Windsurf, ...) over stdio",
	Description: `Speaks the Model Context Protocol on stdin/stdout; the client spawns it.
Tools: uc_store, uc_query, uc_context, uc_get, uc_get_thread, uc_get_session,
uc_list_sessions, uc_get_document, uc_period, uc_forget, uc_status. Resources:
uc://sessions/{id}, uc://documents/{id}, uc://context/auto.

The first ucl mcp (or ucl daemon) on a store owns it and serves it on
DIR/ucl.sock; the others, and every ucl command run meanwhile, attach to it,
so several editors and a terminal share one memory. When the owner exits,
the next call of another ucl mcp takes over. Each call is logged to stderr.

  claude mcp add ucl -- ucl mcp --dir ~/.ucl
  (see docs/mcp.md for Cursor, Windsurf and other clients)`,
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("ucl mcp takes no arguments; the client sends requests on stdin", "unexpected argument %q", c.Args().First())
		}
		eng, err := mcpserver.OpenShared(storeDir(c), engineOptions(c), c.App.ErrWriter)
		if err != nil {
			return openError(err)
		}
		srv := mcpserver.New(eng, mcpserver.Options{Version: version, Log: c.App.ErrWriter})
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		tr := &mcp.IOTransport{Reader: io.NopCloser(c.App.Reader), Writer: nopWriteCloser{c.App.Writer}}
		runErr := srv.Run(ctx, tr)
		// The client closing stdin or a signal is the normal end.
		if errors.Is(runErr, context.Canceled) || errors.Is(runErr, io.EOF) {
			runErr = nil
		}
		return errors.Join(runErr, eng.Close())
	},
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
