package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
)

var storeToolCommand = &cli.Command{
	Name:      "store-tool",
	Usage:     "store one tool call: its name, arguments, result and status",
	ArgsUsage: "NAME",
	Description: `A tool call is a first-class item: NAME and --args are searchable with the
result, --parent names the message that triggered it (` + "`ucl get ID --thread`" + `
shows them together), and it sits in its session's timeline in order. A
result longer than --chunk-tokens is chunked like a document (the first
chunk carries the name and arguments); ` + "`ucl get ID`" + ` gives it back whole.
The same shape is written by JSONL {"type":"tool_call",…}, the MCP uc_store
tool and the proxy.`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "args", Usage: "the call's arguments as `JSON` (kept byte for byte)"},
		&cli.StringFlag{Name: "result", Usage: "the call's output `TEXT`"},
		&cli.StringFlag{Name: "result-file", Usage: "read the output from `FILE` (- for stdin)"},
		&cli.StringFlag{Name: "status", Value: "ok", Usage: "outcome: ok, error, pending, …"},
		&cli.StringFlag{Name: "parent", Usage: "id of the message that triggered the call"},
		&cli.StringFlag{Name: "session", Aliases: []string{"s"}, Usage: "session id"},
		&cli.StringFlag{Name: "role", Value: "tool", Usage: "role"},
		&cli.StringFlag{Name: "time", Aliases: []string{"t"}, Usage: "time of the call (RFC 3339, date or unix ms; default now)"},
		&cli.StringFlag{Name: "id", Usage: "idempotency key"},
		&cli.StringFlag{Name: "chunk-id", Usage: "item id (default: the event id)"},
		&cli.StringSliceFlag{Name: "meta", Aliases: []string{"m"}, Usage: "metadata key=value (repeatable)"},
		&cli.IntFlag{Name: "chunk-tokens", Value: log.DefaultChunkTokens, Usage: "chunk results longer than this"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage(`ucl store-tool NAME --args '{"city":"Berlin"}' --result "22C"`, "too many arguments")
		}
		name := c.Args().First()
		if strings.TrimSpace(name) == "" {
			return usage(`ucl store-tool NAME --args '{"city":"Berlin"}' --result "22C"`, "a tool call needs a name")
		}
		args := c.String("args")
		if args != "" && !json.Valid([]byte(args)) {
			return usage(`--args '{"city":"Berlin"}'`, "--args is not JSON")
		}
		result, file := c.String("result"), c.String("result-file")
		if result != "" && file != "" {
			return usage("give --result or --result-file, not both", "both --result and --result-file given")
		}
		if file != "" {
			var b []byte
			var err error
			if file == "-" {
				b, err = io.ReadAll(c.App.Reader)
			} else {
				b, err = os.ReadFile(file)
			}
			if err != nil {
				return badValue(err, "--result-file takes a readable file; nothing was written")
			}
			result = string(b)
		}
		meta, err := metaFlags(c)
		if err != nil {
			return err
		}
		req := ucl.RememberRequest{Content: result, Session: c.String("session"), Role: c.String("role"), Meta: meta,
			Time: c.String("time"), ID: c.String("id"), Parent: c.String("parent"), ChunkID: c.String("chunk-id"),
			ChunkTokens: c.Int("chunk-tokens"), Tool: &log.ToolCall{Name: name, Args: args, Status: c.String("status")}}
		return withAPI(c, func(api ucl.API) error {
			res, err := api.Remember(context.Background(), req)
			if err != nil {
				return err
			}
			if err := printResults(c, res.Results); err != nil {
				return err
			}
			if res.Document != "" && !jsonOut(c) {
				fmt.Fprintf(c.App.ErrWriter, "tool call %s (result in %d chunks); read it back whole with `ucl get %s`\n", res.Document, len(res.Results), res.Document)
			}
			return nil
		})
	},
}

func metaFlags(c *cli.Context) (map[string]string, error) {
	if !c.IsSet("meta") {
		return nil, nil
	}
	meta := map[string]string{}
	for _, kv := range c.StringSlice("meta") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usage("--meta key=value", "bad --meta %q", kv)
		}
		meta[k] = v
	}
	return meta, nil
}

var editCommand = &cli.Command{
	Name:      "edit",
	Usage:     "replace an item's content (and meta) with a new version",
	ArgsUsage: "ID (TEXT | --file F | -)",
	Description: `The new version replaces the old one everywhere (search, context, sessions,
` + "`ucl get`" + `); the old text leaves the indexes but stays in the log:
` + "`ucl get ID --history`" + ` lists every version with its time and author. A
document (or a long tool result) is edited as a whole by its document id and
re-chunked; one of its chunks cannot be edited alone. A tool call stored
pending gets its result this way (--status ok). --meta replaces the
whole meta (without it the meta is kept). A tombstoned item cannot be
edited: a tombstone hides all of its versions.`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "file", Usage: "the new content is this file's, byte for byte"},
		&cli.StringSliceFlag{Name: "meta", Aliases: []string{"m"}, Usage: "new metadata key=value (repeatable; replaces the meta)"},
		&cli.StringFlag{Name: "by", Usage: "who edits, as the history shows it (default: cli:USER, the OS user; cli when unknown)"},
		&cli.StringFlag{Name: "status", Usage: "a tool call's new status (ok, error, …; default: kept)"},
		&cli.IntFlag{Name: "chunk-tokens", Value: log.DefaultChunkTokens, Usage: "chunk size when re-chunking"},
	},
	Action: func(c *cli.Context) error {
		const example = `ucl edit ID "the corrected text" (or --file PATH)`
		if c.NArg() == 0 {
			return usage(example, "no id given")
		}
		if c.NArg() > 2 {
			return usage(example, "too many arguments")
		}
		id, text, file := c.Args().Get(0), c.Args().Get(1), c.String("file")
		if file != "" && text != "" {
			return usage("give the text or --file FILE, not both", "both TEXT and --file given")
		}
		switch {
		case file != "":
			b, err := os.ReadFile(file)
			if err != nil {
				return badValue(err, "--file takes a readable file; nothing was written")
			}
			text = string(b)
		case text == "-" || text == "" && !stdinIsTerminal(c):
			b, err := io.ReadAll(c.App.Reader)
			if err != nil {
				return err
			}
			text = string(b)
		}
		if strings.TrimSpace(text) == "" {
			return usage(example, "nothing to edit to: the new text is empty")
		}
		meta, err := metaFlags(c)
		if err != nil {
			return err
		}
		by := c.String("by")
		if by == "" {
			by = cliActor()
		}
		req := ucl.EditRequest{ID: id, Content: text, Meta: meta, By: by, ChunkTokens: c.Int("chunk-tokens"), Status: c.String("status")}
		return withAPI(c, func(api ucl.API) error {
			res, err := api.Edit(context.Background(), req)
			switch {
			case errors.Is(err, ucl.ErrEditChunk):
				return withHint(err, "edit the whole document by its id (the chunk_parent); nothing was written")
			case errors.Is(err, ucl.ErrUnknownItem):
				return withHint(err, "ids are printed by `ucl store` and `ucl query`; nothing was written")
			case errors.Is(err, ucl.ErrTombstoned):
				return withHint(err, "store the text as a new item instead; nothing was written")
			case err != nil:
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			printf(c, "edited %s: new version at seq %d (replaces seq %d)\n", res.ID, res.Results[0].Seq, res.Prev)
			return nil
		})
	},
}

// cliActor names an edit made from the command line in the item's history:
// "cli:" and the OS user, or "cli" alone when the user cannot be told.
// (MCP edits say "mcp", the proxy's "ucl-proxy".)
func cliActor() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if name = strings.TrimSpace(name); name == "" {
		return "cli"
	}
	return "cli:" + name
}

// getHistory prints every version of one item, oldest first.
func printHistory(c *cli.Context, it ucl.GetItem) {
	for i, v := range it.History {
		// An original names its role (a store records no editor); an edit
		// names its editor (cli:USER, mcp, ucl-proxy, or --by).
		by := v.By
		if by == "" {
			by = "-"
		}
		what := "stored, role " + by
		if v.Edit {
			what = "edited by " + by
		}
		cur := ""
		if v.Current {
			cur = " (current)"
		}
		printf(c, "v%d  %s  %s  seq %d%s\n", i+1, v.Time, what, v.Seq, cur)
		printf(c, "    %s\n", snippet(v.Content, 400))
	}
}

func runThread(c *cli.Context, api ucl.API, id string) error {
	res, err := api.Thread(context.Background(), ucl.ThreadRequest{ID: id, Depth: c.Int("depth")})
	if err != nil {
		if errors.Is(err, ucl.ErrUnknownItem) || errors.Is(err, ucl.ErrTombstoned) {
			return withHint(err, "ids are printed by `ucl store` and `ucl query`")
		}
		return err
	}
	if jsonOut(c) {
		return printJSON(c, res)
	}
	for _, it := range res.Items {
		indent := strings.Repeat("  ", it.Depth-minDepth(res.Items))
		who := it.Role
		if it.Tool != nil {
			who = "tool " + it.Tool.Name
		}
		mark := " "
		if it.ID == id || it.ChunkParent == id {
			mark = ">"
		}
		printf(c, "%s%s%s  %s  %s\n", mark, indent, fmtMS(it.Time), who, it.ID)
		printf(c, " %s    %s\n", indent, snippet(it.Content, 240))
	}
	return nil
}

func minDepth(items []ucl.ThreadItem) int {
	m := 0
	for _, it := range items {
		m = min(m, it.Depth)
	}
	return m
}
