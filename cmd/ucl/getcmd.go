package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
)

var getCommand = &cli.Command{
	Name:      "get",
	Usage:     "print a chunk, or a whole document, exactly as stored",
	ArgsUsage: "ID",
	Description: `ID is a chunk id (a query result's id) or a document id (the chunk_parent
that ` + "`ucl store`" + ` prints for a document split into chunks). A document's chunks
are joined in order and printed byte for byte as stored, without an added
newline, so ` + "`ucl get ID > file`" + ` gives back the original file.
With --json: {"items":[{"id","found","content","chunks":[…]}]}; several IDs
may be given. An ID that names nothing live fails the command (exit status
1), with --json too (its item says "found": false).
--history lists every version of an edited item (time, who, content),
oldest first. --thread shows the conversation around ID: the messages it
replies to (parent) up to the first, and every reply and tool call below
it, in time order (--depth N: at most N steps each way).`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "history", Usage: "list every version of the item (edits), oldest first"},
		&cli.BoolFlag{Name: "thread", Usage: "show the thread around ID: parents up, replies and tool calls down"},
		&cli.IntFlag{Name: "depth", Usage: "with --thread: follow at most `N` steps each way (0: all)"},
		&cli.StringFlag{Name: "as-of", Usage: "the item as it stood at log `SEQ|TIME` (later edits and tombstones not applied)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() == 0 {
			return usage("ucl get ID (a chunk id or a document id from `ucl store` or `ucl query`)", "no id given")
		}
		if c.NArg() > 1 && !jsonOut(c) {
			return usage("give one ID, or several with --json", "too many arguments")
		}
		if c.Bool("thread") && c.Bool("history") {
			return usage("give --thread or --history, not both", "both --thread and --history given")
		}
		if c.IsSet("depth") && !c.Bool("thread") {
			return usage("ucl get ID --thread --depth 2", "--depth goes with --thread")
		}
		if c.Int("depth") < 0 {
			return usage("--depth takes 0 (all) or a positive number", "bad --depth %d", c.Int("depth"))
		}
		if c.Bool("thread") && c.NArg() > 1 {
			return usage("ucl get ID --thread", "--thread takes one id")
		}
		if c.Bool("thread") && c.IsSet("as-of") {
			return usage("give --thread or --as-of, not both", "--as-of does not go with --thread")
		}
		req := ucl.GetRequest{IDs: c.Args().Slice(), History: c.Bool("history"), AsOf: c.String("as-of")}
		return withAPI(c, func(api ucl.API) error {
			if c.Bool("thread") {
				return runThread(c, api, req.IDs[0])
			}
			res, err := api.Get(context.Background(), req)
			if err != nil {
				return err
			}
			var missing []string
			for _, it := range res.Items {
				if !it.Found {
					missing = append(missing, it.ID)
				}
			}
			if jsonOut(c) {
				// Every id's answer is printed; a missing one still fails
				// the command, as without --json.
				if err := printJSON(c, res); err != nil {
					return err
				}
			}
			if len(missing) > 0 {
				return withHint(&missingError{missing}, "ids are printed by `ucl store` (chunk_parent for documents) and `ucl query`")
			}
			if jsonOut(c) {
				return nil
			}
			it := res.Items[0]
			if len(it.Missing) > 0 {
				fmt.Fprintf(c.App.ErrWriter, "warning: document %s lacks chunk(s) %v (tombstoned); the text has gaps\n", it.ID, it.Missing)
			}
			if req.History {
				printHistory(c, it)
				return nil
			}
			_, err = c.App.Writer.Write([]byte(it.Content))
			return err
		})
	},
}

// missingError names ids that match no live chunk or document; it is the
// engine's ErrUnknownItem (class not_found).
type missingError struct{ ids []string }

func (e *missingError) Error() string {
	q := make([]string, len(e.ids))
	for i, id := range e.ids {
		q[i] = strconv.Quote(id)
	}
	if len(q) == 1 {
		return "no live chunk or document with id " + q[0]
	}
	return "no live chunk or document with ids " + strings.Join(q, ", ")
}

func (e *missingError) Unwrap() error { return ucl.ErrUnknownItem }
