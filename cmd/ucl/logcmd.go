package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
The input is read in batches of at most --batch-events events (10,000) or
--batch-bytes bytes (4 MiB), whichever comes first, so memory stays bounded
whatever the input's size. Each batch is checked completely and then written
atomically, and its results are printed. A bad line writes nothing of its
batch and stops the append: the error names the line and the field, and says
which lines were already written (their count and seqs) and from which line
to go on. An input that starts with lines of ` + "`ucl replay`" + ` is read whole.
"id" makes a line idempotent: appending it again returns the original
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
		&cli.IntFlag{Name: "batch-events", Value: appendBatchEvents, Usage: "read, check and write at most this many events at a time (each batch is atomic)"},
		&cli.IntFlag{Name: "batch-bytes", Value: appendBatchBytes, Usage: "read, check and write at most about this many bytes of input at a time"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usage("ucl append [FILE|-]", "too many arguments")
		}
		var r io.Reader = c.App.Reader
		if c.Args().First() == "" && stdinIsTerminal(c) {
			return usage("ucl append FILE, or pipe JSONL: cat events.jsonl | ucl append -", "no input: give a JSONL file or pipe events on stdin")
		}
		if c.Int("batch-events") < 1 || c.Int("batch-events") > ucl.AppendBlock {
			return usage(fmt.Sprintf("--batch-events takes 1..%d", ucl.AppendBlock), "bad --batch-events %d", c.Int("batch-events"))
		}
		if c.Int("batch-bytes") < 1 {
			return usage("--batch-bytes takes a positive number of bytes", "bad --batch-bytes %d", c.Int("batch-bytes"))
		}
		if name := c.Args().First(); name != "" && name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return badValue(err, "give a JSONL file, or - for stdin; nothing was written")
			}
			defer f.Close()
			r = f
		}
		return appendStream(c, bufio.NewReaderSize(r, 64<<10))
	},
}

// Batches of `ucl append`: the input is read, checked and written this
// much at a time, so that memory stays bounded whatever the input's size.
const (
	appendBatchEvents = 10_000
	appendBatchBytes  = 4 << 20
	// appendMaxLine bounds one input line: the largest request the store
	// owner takes (64 MiB). A shorter line too large for an event (at
	// most 2 MiB of text, which JSON escaping can grow) is refused when
	// its batch is checked, with the bound it breaks.
	appendMaxLine = 64 << 20
)

// appendBatch is the part of the input read and not yet written.
type appendBatch struct {
	buf    bytes.Buffer
	first  int // input line number of the batch's first line
	lines  int // lines in buf
	events int // event lines in buf (not blank, not a # comment)
}

// appendWritten is what earlier batches wrote, for the error of a later one.
type appendWritten struct {
	lines    int // input lines 1..lines were written (or found)
	results  int
	new      int // results neither existed nor duplicates
	min, max uint64
}

func (w *appendWritten) String() string {
	if w.lines == 0 {
		return "nothing was written"
	}
	s := fmt.Sprintf("lines 1..%d of the input were appended (%d results, %d new events", w.lines, w.results, w.new)
	if w.new > 0 {
		s += fmt.Sprintf(", seqs %d..%d", w.min, w.max)
	}
	return s + ")"
}

// appendStream reads JSONL from r and appends it batch by batch (at most
// --batch-events events or --batch-bytes bytes each, whichever comes
// first), printing each batch's results once it is written.
func appendStream(c *cli.Context, r *bufio.Reader) (err error) {
	maxEvents, maxBytes := c.Int("batch-events"), c.Int("batch-bytes")
	chunkTokens := c.Int("chunk-tokens")
	var (
		b       = &appendBatch{first: 1}
		written appendWritten
		lineNo  int
		api     *ucl.Shared
		p       = newProgress(c, "append", 0)
	)
	boundHeap(appendMemLimit)
	defer p.Done()
	defer func() {
		if api != nil {
			if cerr := api.Close(); err == nil {
				err = cerr
			}
		}
	}()
	// The rest of the input after a bad line, from the line after the
	// last one written: say how to go on.
	resume := func() string {
		if written.lines == 0 {
			return "nothing was written; fix the line and run the whole input again"
		}
		return fmt.Sprintf("%s; fix the line and append the input from line %d on (e.g. tail -n +%d FILE | ucl append -)", written.String(), written.lines+1, written.lines+1)
	}
	flush := func(last bool) error {
		if b.events == 0 && !(last && written.lines == 0) {
			// Only blank lines or comments: nothing to write (an input
			// with no event at all is refused below, as before).
			written.lines += b.lines
			b.buf.Reset()
			b.first, b.lines = lineNo+1, 0
			return nil
		}
		jsonl := b.buf.String()
		// Check before attaching or writing: a bad line writes nothing of
		// its batch, and the store is not opened for a bad first batch.
		// Once this process owns the store, Append parses the batch and
		// names a bad line itself (handled below): checking here too parsed
		// every line twice. An owner's answer over its socket does not
		// name the line, so batches sent there are checked here.
		if api == nil || api.Owner() == nil {
			if err := ucl.ValidateJSONL(jsonl, chunkTokens); err != nil {
				var le *ucl.LineError
				if errors.As(err, &le) {
					le.Line += b.first - 1
				}
				return withHint(err, resume())
			}
		}
		if api == nil {
			a, err := ucl.OpenShared(storeDir(c), engineOptions(c), ucl.SharedOptions{})
			if err != nil {
				return openError(err)
			}
			api = a
		}
		res, err := api.Append(context.Background(), ucl.AppendRequest{JSONL: jsonl, ChunkTokens: chunkTokens,
			AllowDuplicate: c.Bool("allow-duplicate")})
		if errors.Is(err, ucl.ErrOutcomeUnknown) {
			// The owner died: look the batch's events up (outcome.go). All
			// written: go on with the next batch, attached anew.
			rs, rerr := resolveUnknownResults(c, err)
			_ = api.Close() // the dead owner's handle: its error says nothing about the store
			api = nil
			if rerr != nil {
				if written.lines > 0 {
					return withHint(rerr, fmt.Sprintf("before lines %d..%d (above), %s; check them, then append the input from line %d on", b.first, b.first+b.lines-1, written.String(), b.first))
				}
				return rerr
			}
			res, err = &ucl.AppendResult{Results: rs}, nil
		} else if res != nil {
			if perr := printResults(c, res.Results); perr != nil && err == nil {
				return perr
			}
		}
		if err != nil {
			if errors.Is(err, ucl.ErrNoInput) {
				return withHint(err, "give one JSON event per line")
			}
			if errors.Is(err, ucl.ErrBadInput) {
				var le *ucl.LineError
				if errors.As(err, &le) {
					le.Line += b.first - 1
				}
				return withHint(err, resume())
			}
			if res == nil {
				return withHint(err, fmt.Sprintf("lines %d..%d were not written; %s", b.first, b.first+b.lines-1, written.String()))
			}
			return withHint(err, fmt.Sprintf("in lines %d..%d, the events printed were written; %s", b.first, b.first+b.lines-1, written.String()))
		}
		written.lines += b.lines
		for _, e := range res.Results {
			written.results++
			if e.Existed || e.DuplicateOf != "" {
				continue
			}
			if written.new == 0 || e.Seq < written.min {
				written.min = e.Seq
			}
			written.max = max(written.max, e.Seq)
			written.new++
		}
		p.Set(uint64(written.results), 0)
		b.buf.Reset()
		b.first, b.lines, b.events = lineNo+1, 0, 0
		return nil
	}
	for {
		ln, err := readLine(r, appendMaxLine)
		if err == io.EOF && ln == nil {
			break
		}
		if err != nil && err != io.EOF {
			if errors.Is(err, errLineTooLong) {
				return withHint(fmt.Errorf("line %d: %w", lineNo+1, err), resume())
			}
			return withHint(fmt.Errorf("read input: %w", err), resume())
		}
		lineNo++
		b.buf.Write(ln)
		b.lines++
		if t := bytes.TrimSpace(ln); len(t) > 0 && t[0] != '#' {
			if written.lines == 0 && b.events == 0 && replayLine(t) {
				// A replay stream (`ucl replay | ucl append`) carries state
				// across lines (skipped seqs, withheld chunks): it is read
				// whole, as one input.
				maxEvents, maxBytes = math.MaxInt, math.MaxInt
			}
			b.events++
		}
		if b.events >= maxEvents || b.buf.Len() >= maxBytes {
			if err := flush(false); err != nil {
				return err
			}
		}
		if err == io.EOF {
			break
		}
	}
	if b.lines > 0 || written.lines == 0 {
		return flush(true)
	}
	return nil
}

// errLineTooLong is returned by readLine for a line over its bound.
var errLineTooLong = errors.New("line too long: an event holds at most 2 MiB of text (a document; a conversation turn less)")

// readLine returns the next line of r with its newline (none at the end
// of the input), reading at most max bytes of it.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(out)+len(frag) > max {
			return nil, fmt.Errorf("%w (over %d bytes)", errLineTooLong, max)
		}
		out = append(out, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(out) > 0 {
			if out[len(out)-1] != '\n' {
				out = append(out, '\n')
			}
			return out, nil
		}
		return out, err
	}
}

// replayLine reports whether ln is a line `ucl replay` printed (it has
// "seq" and "hash"; ingest reads such lines with state across lines).
func replayLine(ln []byte) bool {
	if !bytes.Contains(ln, []byte(`"seq"`)) || !bytes.Contains(ln, []byte(`"hash"`)) {
		return false
	}
	var probe struct {
		Seq  *uint64 `json:"seq"`
		Hash string  `json:"hash"`
	}
	return json.Unmarshal(ln, &probe) == nil && probe.Seq != nil && probe.Hash != ""
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
