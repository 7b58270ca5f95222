package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
)

var appendCommand = &cli.Command{
	Name:      "append",
	Usage:     "append JSONL events from a file or stdin",
	ArgsUsage: "[FILE|-]",
	Description: `One event per line, e.g.
  {"type":"store","session":"s1","role":"user","kind":"conversation","content":"…","meta":{"k":"v"},"time":"2023-05-08T13:56:00Z"}
  {"type":"tombstone","chunks":["…"],"reason":"…"}
The whole input is parsed and checked before anything is written: one bad line
rejects the input (the error names the line and the field) and the log is not
touched. Inputs of up to 50,000 events are then written atomically in one
batch. "id" makes a line idempotent: appending it again returns the original
seq. An item whose content, normalized (case, white space and zero-width
characters ignored), equals a live item of the same session, role and kind
(or an earlier line of the input) is not written: its result carries
"duplicate_of" (the existing chunk id) and that item's seq, id and hash.
--allow-duplicate writes it anyway (a line's "allow_duplicate":true, that
line only). Prints one JSON result per event: seq,
id, hash (and "existed", "duplicate_of").`,
	Flags: []cli.Flag{
		&cli.IntFlag{Name: "chunk-tokens", Value: log.DefaultChunkTokens, Usage: "split documents and tool calls longer than this many (estimated) tokens"},
		&cli.BoolFlag{Name: "allow-duplicate", Usage: "write items whose content duplicates a live item (default: report duplicate_of, write nothing)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage("ucl append [FILE|-]", "too many arguments")
		}
		var r io.Reader = c.App.Reader
		if c.Args().First() == "" && stdinIsTerminal(c) {
			return usage("ucl append FILE, or pipe JSONL: cat events.jsonl | ucl append -", "no input: give a JSONL file or pipe events on stdin")
		}
		if name := c.Args().First(); name != "" && name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return badValue(err, "give a JSONL file, or - for stdin; nothing was written")
			}
			defer f.Close()
			r = f
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		// Validate before attaching: a bad input is refused even when the
		// store is busy, and without a round trip.
		if err := ucl.ValidateJSONL(string(b), c.Int("chunk-tokens")); err != nil {
			return withHint(err, "nothing was written; fix the line and run the whole input again")
		}
		return withAPI(c, func(api ucl.API) error {
			p := newProgress(c, "append", 0)
			res, err := api.Append(context.Background(), ucl.AppendRequest{JSONL: string(b), ChunkTokens: c.Int("chunk-tokens"),
				AllowDuplicate: c.Bool("allow-duplicate"), Progress: func(_ string, done, total uint64) { p.Set(done, total) }})
			p.Done()
			if res != nil {
				if perr := printResults(c, res.Results); perr != nil && err == nil {
					return perr
				}
			}
			switch {
			case errors.Is(err, ucl.ErrOutcomeUnknown):
				return resolveUnknown(c, err) // outcome.go
			case errors.Is(err, ucl.ErrNoInput):
				return withHint(err, "give one JSON event per line")
			case errors.Is(err, ucl.ErrBadInput):
				return withHint(err, "nothing was written; fix the line and run the whole input again")
			case err != nil && res == nil:
				return withHint(err, "nothing was written")
			}
			return err
		})
	},
}

func printResults(c *cli.Context, rs []ucl.EventResult) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetEscapeHTML(false)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

var storeCommand = &cli.Command{
	Name:      "store",
	Usage:     "store one piece of memory (text argument, --file or stdin)",
	ArgsUsage: "[TEXT|-]",
	Description: `TEXT is stored as it is, even when it names a file (a warning says so): to
store a file's contents, pass --file PATH (or pipe it: ucl store - < PATH).
A document longer than --chunk-tokens is split into chunks; ucl store then
prints the document id (chunk_parent) and ` + "`ucl get ID`" + ` gives it back byte
for byte. Text equal, ignoring case, white space and zero-width characters,
to a live item of the same session, role and kind is not stored again: the
result names that item (duplicate_of) unless --allow-duplicate.`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "file", Usage: "store this file's contents byte for byte (sets meta name to its base name unless given)"},
		&cli.StringFlag{Name: "session", Aliases: []string{"s"}, Usage: "session id"},
		&cli.StringFlag{Name: "role", Aliases: []string{"r"}, Value: "user", Usage: "role (user, assistant, system, tool, …)"},
		&cli.StringFlag{Name: "kind", Value: "conversation", Usage: "kind of content: `conversation|document|knowledge|tool_call`"},
		&cli.StringSliceFlag{Name: "meta", Aliases: []string{"m"}, Usage: "metadata key=value (repeatable)"},
		&cli.StringFlag{Name: "time", Aliases: []string{"t"}, Usage: "time of the content (RFC 3339, date or unix ms; default now)"},
		&cli.StringFlag{Name: "id", Usage: "idempotency key (storing the same id and content again is a no-op)"},
		&cli.StringFlag{Name: "parent", Usage: "chunk id this replies to"},
		&cli.StringFlag{Name: "chunk-id", Usage: "chunk id (default: the event id)"},
		&cli.IntFlag{Name: "chunk-tokens", Value: log.DefaultChunkTokens, Usage: "split documents and tool calls longer than this"},
		&cli.BoolFlag{Name: "allow-duplicate", Usage: "store it even when a live item of the same session, role and kind has the same text (ignoring case and spacing)"},
		&cli.StringSliceFlag{Name: "supersedes", Usage: "`ID` of a live item this one replaces as outdated (repeatable)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage(`quote the text: ucl store "text with spaces"`, "too many arguments")
		}
		text, file := c.Args().First(), c.String("file")
		if file != "" && c.NArg() > 0 {
			return usage("give the text or --file FILE, not both", "both TEXT and --file given")
		}
		if file == "" && text == "" && stdinIsTerminal(c) {
			return usage(`ucl store "what to remember" (or --file PATH, or pipe text on stdin)`, "nothing to store: no text given")
		}
		if file == "" && text != "-" && looksLikeFile(text) {
			fmt.Fprintf(c.App.ErrWriter, "warning: storing the text %q itself, which is also the name of a file; to store the file's contents: ucl store --file %s\n", text, text)
		}
		if file != "" {
			b, err := os.ReadFile(file)
			if err != nil {
				return badValue(err, "--file takes a readable file; nothing was written")
			}
			text = string(b)
		} else if text == "" || text == "-" {
			b, err := io.ReadAll(c.App.Reader)
			if err != nil {
				return err
			}
			text = string(b)
		}
		if strings.TrimSpace(text) == "" {
			return usage(`ucl store "what to remember"`, "nothing to store: the text is empty")
		}
		if _, err := log.ParseKind(c.String("kind")); err != nil {
			return usage("--kind takes conversation, document, knowledge or tool_call", "%v", err)
		}
		meta := map[string]string{}
		for _, kv := range c.StringSlice("meta") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usage("--meta key=value", "bad --meta %q", kv)
			}
			meta[k] = v
		}
		if _, named := meta["name"]; file != "" && !named {
			meta["name"] = filepath.Base(file)
		}
		if t := c.String("time"); t != "" {
			if _, err := ucl.ParseTime(t); err != nil {
				return usage("--time 2023-05-08T13:56:00Z", "%v", err)
			}
		}
		req := ucl.RememberRequest{Content: text, Session: c.String("session"), Role: c.String("role"), Kind: c.String("kind"),
			Meta: meta, Time: c.String("time"), ID: c.String("id"), Parent: c.String("parent"), ChunkID: c.String("chunk-id"),
			ChunkTokens: c.Int("chunk-tokens"), AllowDuplicate: c.Bool("allow-duplicate"), Supersedes: c.StringSlice("supersedes")}
		return withAPI(c, func(api ucl.API) error {
			res, err := api.Remember(context.Background(), req)
			if errors.Is(err, ucl.ErrOutcomeUnknown) {
				return resolveUnknown(c, err) // outcome.go
			}
			if errors.Is(err, ucl.ErrUnknownItem) {
				return withHint(err, "--supersedes takes the id of a live item (from `ucl store` or `ucl query`); nothing was written")
			}
			if errors.Is(err, log.ErrDocumentTooLarge) {
				return withHint(err, "store the text as several documents of at most 2 MiB each; nothing was written")
			}
			if errors.Is(err, log.ErrTooLarge) {
				return withHint(err, "store long text as a document (--kind document), which is split into chunks; nothing was written")
			}
			if err != nil {
				return err
			}
			if err := printResults(c, res.Results); err != nil {
				return err
			}
			if d := res.Results[0].DuplicateOf; d != "" && !jsonOut(c) {
				fmt.Fprintf(c.App.ErrWriter, "duplicate of %s (same text, ignoring case and spacing, in the same session, role and kind): nothing stored; --allow-duplicate stores it anyway\n", d)
				return nil
			}
			if res.Document != "" && !jsonOut(c) {
				fmt.Fprintf(c.App.ErrWriter, "document %s (%d chunks); read it back whole with `ucl get %s`\n", res.Document, len(res.Results), res.Document)
			}
			return nil
		})
	},
}

var replayCommand = &cli.Command{
	Name:  "replay",
	Usage: "print events as JSONL, verified against the chain",
	Description: `Every event is checked (CRC, hash chain) and decrypted. --raw prints only
the plaintext headers and works without the vault key (auditors).
Content of tombstoned chunks is withheld unless --include-tombstoned.`,
	Flags: []cli.Flag{
		&cli.Uint64Flag{Name: "from", Usage: "first seq"},
		&cli.Uint64Flag{Name: "to", Usage: "last seq (default: head)"},
		&cli.StringFlag{Name: "type", Usage: "only this event type (store, tombstone, share_grant, share_revoke, rekey)"},
		&cli.StringFlag{Name: "session", Usage: "only store events of this session"},
		&cli.BoolFlag{Name: "raw", Usage: "headers only, no decryption (no vault key needed)"},
		&cli.BoolFlag{Name: "include-tombstoned", Usage: "show the content of tombstoned chunks too"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("ucl replay [--from N] [--to N] [--type T] [--session S] [--raw]", "unexpected argument %q", c.Args().First())
		}
		if t := c.String("type"); t != "" {
			if _, err := log.ParseType(t); err != nil {
				return usage("--type takes store, tombstone, share_grant, share_revoke or rekey", "%v", err)
			}
		}
		from, to := c.Uint64("from"), c.Uint64("to")
		if to != 0 && from > to {
			return usage("--from must not be after --to", "empty range %d..%d", from, to)
		}
		if c.Bool("raw") && c.String("session") != "" {
			return usage("--session needs decryption; drop --raw", "--session cannot be used with --raw")
		}
		req := ucl.ReplayRequest{From: from, To: to, Type: c.String("type"), Session: c.String("session"),
			Raw: c.Bool("raw"), IncludeTombstoned: c.Bool("include-tombstoned")}
		return withAPI(c, func(api ucl.API) error {
			w := c.App.Writer
			err := api.Replay(context.Background(), req, func(line json.RawMessage) error {
				_, err := w.Write(append(line, '\n'))
				return err
			})
			if errors.Is(err, log.ErrNoKeys) {
				return withHint(err, "no vault key here: use --raw for headers, or --vault-key FILE")
			}
			return err
		})
	},
}

// looksLikeFile reports whether a text argument names an existing regular
// file: the user may have meant --file.
func looksLikeFile(text string) bool {
	if len(text) > 4096 || strings.ContainsAny(text, "\n\x00") {
		return false
	}
	fi, err := os.Stat(text)
	return err == nil && fi.Mode().IsRegular()
}
