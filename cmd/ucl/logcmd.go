package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/log"
)

// appendBlock is how many events one atomic AppendBatch of `ucl append`
// holds. Inputs up to this size are all-or-nothing; larger ones are
// validated completely first and then written in blocks of this size.
const appendBlock = 50_000

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
seq. Prints one JSON result per event: seq, id, hash (and "existed").`,
	Flags: []cli.Flag{
		&cli.IntFlag{Name: "chunk-tokens", Value: log.DefaultChunkTokens, Usage: "split documents and tool calls longer than this many (estimated) tokens"},
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
				return withHint(err, "give a JSONL file, or - for stdin")
			}
			defer f.Close()
			r = f
		}
		entries, err := ingest.ReadAll(r, ingest.Options{ChunkTokens: c.Int("chunk-tokens")})
		if err != nil {
			return withHint(err, "nothing was written; fix the line and run the whole input again")
		}
		if len(entries) == 0 {
			return withHint(errors.New("no events in input"), "give one JSON event per line")
		}
		s, err := openStore(c)
		if err != nil {
			return err
		}
		defer s.Close()
		if len(entries) > appendBlock {
			// Several batches: a conflict late in the input must fail
			// before the first one is written.
			if err := s.Log.Check(entries); err != nil {
				return withHint(fmt.Errorf("append: %w", err), "nothing was written")
			}
		}
		p := newProgress(c, "append", uint64(len(entries)))
		for i := 0; i < len(entries); i += appendBlock {
			block := entries[i:min(i+appendBlock, len(entries))]
			rs, err := s.Log.AppendBatch(context.Background(), block)
			if err != nil {
				if i > 0 {
					return fmt.Errorf("append events %d..%d: %w (events 1..%d were written)", i+1, i+len(block), err, i)
				}
				return withHint(fmt.Errorf("append: %w", err), "nothing was written")
			}
			p.Set(uint64(i+len(block)), 0)
			for _, r := range rs {
				printResult(c, r)
			}
		}
		p.Done()
		return nil
	},
}

func printResult(c *cli.Context, r log.Result) {
	if r.Existed {
		printf(c, `{"seq":%d,"id":"%s","hash":"%s","existed":true}`+"\n", r.Seq, r.ID, r.Hash)
		return
	}
	printf(c, `{"seq":%d,"id":"%s","hash":"%s"}`+"\n", r.Seq, r.ID, r.Hash)
}

var storeCommand = &cli.Command{
	Name:      "store",
	Usage:     "store one piece of memory (text argument or stdin)",
	ArgsUsage: "[TEXT|-]",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "session", Aliases: []string{"s"}, Usage: "session id"},
		&cli.StringFlag{Name: "role", Aliases: []string{"r"}, Value: "user", Usage: "role (user, assistant, system, tool, …)"},
		&cli.StringFlag{Name: "kind", Aliases: []string{"k"}, Value: "conversation", Usage: "conversation, document, knowledge or tool_call"},
		&cli.StringSliceFlag{Name: "meta", Aliases: []string{"m"}, Usage: "metadata key=value (repeatable)"},
		&cli.StringFlag{Name: "time", Aliases: []string{"t"}, Usage: "time of the content (RFC 3339, date or unix ms; default now)"},
		&cli.StringFlag{Name: "id", Usage: "idempotency key (storing the same id and content again is a no-op)"},
		&cli.StringFlag{Name: "parent", Usage: "chunk id this replies to"},
		&cli.StringFlag{Name: "chunk-id", Usage: "chunk id (default: the event id)"},
		&cli.IntFlag{Name: "chunk-tokens", Value: log.DefaultChunkTokens, Usage: "split documents and tool calls longer than this"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage(`quote the text: ucl store "text with spaces"`, "too many arguments")
		}
		text := c.Args().First()
		if text == "" && stdinIsTerminal(c) {
			return usage(`ucl store "what to remember" (or pipe text on stdin)`, "nothing to store: no text given")
		}
		if text == "" || text == "-" {
			b, err := io.ReadAll(c.App.Reader)
			if err != nil {
				return err
			}
			text = string(b)
		}
		if strings.TrimSpace(text) == "" {
			return usage(`ucl store "what to remember"`, "nothing to store: the text is empty")
		}
		kind, err := log.ParseKind(c.String("kind"))
		if err != nil {
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
		st := &log.Store{Kind: kind, Session: c.String("session"), Role: c.String("role"), Content: text,
			Meta: meta, Parent: c.String("parent"), ChunkID: c.String("chunk-id")}
		if t := c.String("time"); t != "" {
			if st.Time, err = ingest.ParseTime(t); err != nil {
				return usage("--time 2023-05-08T13:56:00Z", "%v", err)
			}
		}
		var id log.ID
		if c.String("id") != "" {
			id = ingest.EventID(c.String("id"))
		}
		s, err := openStore(c)
		if err != nil {
			return err
		}
		defer s.Close()
		rs, err := s.Log.AppendBatch(context.Background(), ingest.StoreEntries(st, id, c.Int("chunk-tokens")))
		if err != nil {
			return err
		}
		for _, r := range rs {
			printResult(c, r)
		}
		return nil
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
		var typ log.Type
		if t := c.String("type"); t != "" {
			var err error
			if typ, err = log.ParseType(t); err != nil {
				return usage("--type takes store, tombstone, share_grant, share_revoke or rekey", "%v", err)
			}
		}
		from, to := c.Uint64("from"), c.Uint64("to")
		if to != 0 && from > to {
			return usage("--from must not be after --to", "empty range %d..%d", from, to)
		}
		var s interface {
			Close() error
		}
		st, err := openStoreMaybeKeys(c)
		if err != nil {
			return err
		}
		s = st
		defer s.Close()
		w := c.App.Writer
		ctx := context.Background()
		if c.Bool("raw") || !st.Log.HasKeys() {
			if !c.Bool("raw") {
				return withHint(log.ErrNoKeys, "no vault key here: use --raw for headers, or --vault-key FILE")
			}
			if c.String("session") != "" {
				return usage("--session needs decryption; drop --raw", "--session cannot be used with --raw")
			}
			return st.Log.Records(ctx, from, to, func(r *log.Record) error {
				if typ != 0 && r.Header.Type != typ {
					return nil
				}
				_, err := fmt.Fprintf(w, `{"seq":%d,"time":"%s","type":"%s","id":"%s","key_epoch":%d,"hash":"%s","prev":"%s","body_bytes":%d}`+"\n",
					r.Header.Seq, log.FormatTime(r.Header.Time), r.Header.Type, r.Header.ID, r.Header.KeyEpoch, r.Hash, r.Header.Prev, len(r.Raw)-log.HeaderSize)
				return err
			})
		}
		var dead map[string]uint64
		if !c.Bool("include-tombstoned") {
			tr := log.NewTombstoneTracker()
			if err := st.Log.Events(ctx, 0, 0, func(e *log.Event) error { tr.Observe(e); return nil }); err != nil {
				return err
			}
			dead = tr.Dead()
		}
		enc := newLineEncoder(w)
		return st.Log.Events(ctx, from, to, func(e *log.Event) error {
			if typ != 0 && e.Type != typ {
				return nil
			}
			if sess := c.String("session"); sess != "" {
				if s := e.Store(); s == nil || s.Session != sess {
					return nil
				}
			}
			if s := e.Store(); s != nil {
				if by, ok := dead[s.ChunkID]; ok {
					return enc.encodeTombstoned(e, by)
				}
			}
			return enc.encode(e)
		})
	},
}

func init() { register(appendCommand, storeCommand, replayCommand) }
