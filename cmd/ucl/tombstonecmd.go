package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
)

var tombstoneCommand = &cli.Command{
	Name:  "tombstone",
	Usage: "remove chunks, a document, a session or a time range from every projection",
	Description: `Appends a tombstone event. Targets: --chunk IDs, a whole chunked document
(--document PARENT, expanded to its chunk ids), and/or --session and a
content-time range --from/--to (chunks matching all of those given).
` + ucl.TombstoneNote,
	Flags: []cli.Flag{
		&cli.StringSliceFlag{Name: "chunk", Usage: "chunk id (repeatable)"},
		&cli.StringSliceFlag{Name: "document", Usage: "chunk parent of a document: all its chunks (repeatable)"},
		&cli.StringFlag{Name: "session", Usage: "session id"},
		&cli.StringFlag{Name: "from", Usage: "content time range start (inclusive)"},
		&cli.StringFlag{Name: "to", Usage: "content time range end (exclusive)"},
		&cli.StringFlag{Name: "reason", Usage: "why (kept in the audit trail)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("targets are flags: --chunk, --document, --session, --from/--to", "unexpected argument %q", c.Args().First())
		}
		req := ucl.TombstoneRequest{Chunks: c.StringSlice("chunk"), Documents: c.StringSlice("document"), Session: c.String("session"),
			From: c.String("from"), To: c.String("to"), Reason: c.String("reason")}
		var from, to int64
		var err error
		if req.From != "" {
			if from, err = ucl.ParseTime(req.From); err != nil {
				return usage("--from 2023-05-01", "%v", err)
			}
		}
		if req.To != "" {
			if to, err = ucl.ParseTime(req.To); err != nil {
				return usage("--to 2023-06-01", "%v", err)
			}
		}
		if (from != 0 || to != 0) && to <= from {
			return usage("give both --from and --to, with --to after --from", "bad time range")
		}
		if len(req.Chunks) == 0 && len(req.Documents) == 0 && req.Session == "" && from == 0 {
			return usage("say what to remove: --chunk ID, --document PARENT, --session S or --from/--to", "no targets")
		}
		return withAPI(c, func(api ucl.API) error {
			res, err := api.Tombstone(context.Background(), req)
			if errors.Is(err, ucl.ErrNoDocument) {
				return withHint(err, "nothing was written; see `ucl session show ID` for document ids")
			}
			if errors.Is(err, ucl.ErrNoMatch) {
				return withHint(err, "nothing was written; check the ids with `ucl query` or `ucl session show ID`, sessions with `ucl session list`")
			}
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			printf(c, "tombstone seq %d removed %d chunk(s)\n", res.Seq, len(res.Removed))
			fmt.Fprintln(c.App.ErrWriter, res.Note)
			return nil
		})
	},
}
