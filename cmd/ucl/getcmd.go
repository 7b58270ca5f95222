package main

import (
	"context"
	"fmt"

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
may be given.`,
	Action: func(c *cli.Context) error {
		if c.NArg() == 0 {
			return usage("ucl get ID (a chunk id or a document id from `ucl store` or `ucl query`)", "no id given")
		}
		if c.NArg() > 1 && !jsonOut(c) {
			return usage("give one ID, or several with --json", "too many arguments")
		}
		req := ucl.GetRequest{IDs: c.Args().Slice()}
		return withAPI(c, func(api ucl.API) error {
			res, err := api.Get(context.Background(), req)
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			it := res.Items[0]
			if !it.Found {
				return withHint(fmt.Errorf("no live chunk or document with id %q", it.ID), "ids are printed by `ucl store` (chunk_parent for documents) and `ucl query`")
			}
			if len(it.Missing) > 0 {
				fmt.Fprintf(c.App.ErrWriter, "warning: document %s lacks chunk(s) %v (tombstoned); the text has gaps\n", it.ID, it.Missing)
			}
			_, err = c.App.Writer.Write([]byte(it.Content))
			return err
		})
	},
}
