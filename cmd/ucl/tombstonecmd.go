package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/log"
)

const notErasure = "note: a tombstone hides content from every projection, query and replay at once, " +
	"but it is not erasure: the ciphertext stays on Arweave and the current vault key can still decrypt it. " +
	"Durable erasure needs a vault-key rotation (shred)."

var tombstoneCommand = &cli.Command{
	Name:  "tombstone",
	Usage: "remove chunks, a document, a session or a time range from every projection",
	Description: `Appends a tombstone event. Targets: --chunk IDs, a whole chunked document
(--document PARENT, expanded to its chunk ids), and/or --session and a
content-time range --from/--to (chunks matching all of those given).
` + notErasure,
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
		t := &log.Tombstone{Chunks: c.StringSlice("chunk"), Session: c.String("session"), Reason: c.String("reason")}
		var err error
		if f := c.String("from"); f != "" {
			if t.From, err = ingest.ParseTime(f); err != nil {
				return usage("--from 2023-05-01", "%v", err)
			}
		}
		if to := c.String("to"); to != "" {
			if t.To, err = ingest.ParseTime(to); err != nil {
				return usage("--to 2023-06-01", "%v", err)
			}
		}
		if (t.From != 0 || t.To != 0) && t.To <= t.From {
			return usage("give both --from and --to, with --to after --from", "bad time range")
		}
		docs := c.StringSlice("document")
		if len(t.Chunks) == 0 && len(docs) == 0 && t.Session == "" && t.From == 0 {
			return usage("say what to remove: --chunk ID, --document PARENT, --session S or --from/--to", "no targets")
		}
		s, set, err := openProjected(c)
		if err != nil {
			return err
		}
		defer s.Close()
		defer set.Close()
		for _, d := range docs {
			parts, err := set.Timelines.Document(d)
			if err != nil {
				return err
			}
			if len(parts) == 0 {
				return withHint(fmt.Errorf("no live document with chunk parent %q", d), "see `ucl session show ID` for document ids")
			}
			for _, p := range parts {
				t.Chunks = append(t.Chunks, p.ID)
			}
		}
		r, err := s.Log.Append(context.Background(), log.Entry{Body: t})
		if err != nil {
			return err
		}
		if err := set.CatchUp(context.Background(), nil); err != nil {
			return err
		}
		removed, err := set.Timelines.Removed(r.Seq)
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if jsonOut(c) {
			return printJSON(c, map[string]any{"seq": r.Seq, "id": r.ID, "hash": r.Hash, "removed": removed, "erasure": false, "note": notErasure})
		}
		printf(c, "tombstone seq %d removed %d chunk(s)\n", r.Seq, len(removed))
		fmt.Fprintln(c.App.ErrWriter, notErasure)
		return nil
	},
}

func init() { register(tombstoneCommand) }
