package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/importer"
)

// importBatchLines is how many messages one append of an import carries:
// a crash loses at most the batch in flight, and re-running the import
// stores only what is missing (the lines are idempotent).
const importBatchLines = 5000

// importSummary is what `ucl import` reports.
type importSummary struct {
	From          string `json:"from"`
	Conversations int    `json:"conversations"`
	Messages      int    `json:"messages"`
	Stored        int    `json:"stored"`  // new events
	Existed       int    `json:"existed"` // already in the store (an earlier import)
}

var importCommand = &cli.Command{
	Name:      "import",
	Usage:     "bring in conversations exported from ChatGPT or Claude",
	ArgsUsage: "[chatgpt|claude] FILE",
	Description: `Reads the conversations.json of a ChatGPT export (Settings → Data controls →
Export data) or of a Claude export (Settings → Privacy → Export data) and
stores each conversation as a session (chatgpt-<id>, claude-<uuid>), each
message as a turn with its time and the conversation title in meta. Of a
ChatGPT conversation only the branch you kept is imported (not answers you
regenerated away). Importing the same export again stores nothing new;
a newer export adds what is new. Prints a summary (--json: as JSON).
  ucl import --from chatgpt conversations.json
  ucl import claude conversations.json`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "from", Usage: "export format: `chatgpt|claude`"},
	},
	Action: func(c *cli.Context) error {
		from, file := c.String("from"), c.Args().First()
		switch {
		case c.NArg() == 2 && from == "":
			from, file = c.Args().Get(0), c.Args().Get(1)
		case c.NArg() != 1:
			return usage("ucl import --from chatgpt conversations.json", "want the export format and one FILE")
		}
		var read func(*os.File, func(*importer.Conversation) error) error
		switch strings.ToLower(from) {
		case "chatgpt":
			read = func(f *os.File, fn func(*importer.Conversation) error) error { return importer.ChatGPT(f, fn) }
		case "claude":
			read = func(f *os.File, fn func(*importer.Conversation) error) error { return importer.Claude(f, fn) }
		default:
			return usage("--from chatgpt or --from claude", "unknown export format %q", from)
		}
		f, err := os.Open(file)
		if err != nil {
			return withHint(err, "give the conversations.json of the unzipped export")
		}
		defer f.Close()
		sum := importSummary{From: strings.ToLower(from)}
		return withAPI(c, func(api ucl.API) error {
			p := newProgress(c, "import", 0)
			defer p.Done()
			var batch strings.Builder
			lines := 0
			flush := func() error {
				if lines == 0 {
					return nil
				}
				res, err := api.Append(context.Background(), ucl.AppendRequest{JSONL: batch.String()})
				if err != nil {
					return err
				}
				for _, r := range res.Results {
					if r.Existed {
						sum.Existed++
					} else {
						sum.Stored++
					}
				}
				batch.Reset()
				lines = 0
				p.Set(uint64(sum.Messages), 0)
				return nil
			}
			err := read(f, func(conv *importer.Conversation) error {
				sum.Conversations++
				if len(conv.Messages) == 0 {
					return nil
				}
				l, err := conv.JSONL()
				if err != nil {
					return err
				}
				batch.WriteString(l)
				lines += len(conv.Messages)
				sum.Messages += len(conv.Messages)
				if lines >= importBatchLines {
					return flush()
				}
				return nil
			})
			if err == nil {
				err = flush()
			}
			if err != nil {
				if errors.Is(err, importer.ErrFormat) {
					return withHint(err, "is this the conversations.json of a "+sum.From+" export? (what was read before the error is stored; run the import again after fixing it)")
				}
				return err
			}
			p.Done()
			if jsonOut(c) {
				return printJSON(c, sum)
			}
			printf(c, "imported %d conversations, %d messages from %s: %d stored, %d already there\n",
				sum.Conversations, sum.Messages, sum.From, sum.Stored, sum.Existed)
			return nil
		})
	},
}
