package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
)

var daemonCommand = &cli.Command{
	Name:  "daemon",
	Usage: "own the store and serve the other ucl commands on DIR/ucl.sock until stopped",
	Description: `Opens the store (taking its lock) and answers the engine's JSON API on the
unix socket DIR/ucl.sock (mode 0600). Every other ucl command on this store
finds the socket and sends its request here, printing exactly what it would
have printed on its own; with no owner running they open the store
themselves. Projections stay open and caught up between commands. Stops on
SIGINT/SIGTERM and removes the socket.`,
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("ucl daemon takes no arguments", "unexpected argument %q", c.Args().First())
		}
		dir := storeDir(c)
		if cl, err := ucl.Dial(dir); err == nil {
			cl.Close()
			return withHint(fmt.Errorf("daemon: %s is already served", ucl.SocketPath(dir)), "another ucl owns this store; its commands attach to it")
		}
		s, err := ucl.Open(dir, engineOptions(c))
		if err != nil {
			return openError(err)
		}
		defer s.Close()
		ctx, stop := signalContext()
		defer stop()
		if !jsonOut(c) {
			fmt.Fprintf(c.App.ErrWriter, "ucl: serving %s on %s\n", dir, ucl.SocketPath(dir))
		}
		if err := s.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("daemon: %w", err)
		}
		return nil
	},
}
