package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/config"
	"github.com/unlimitedcontext/ucl/log"
)

// How ucl fails. Every error a command returns is reported by report, once:
// its class (the engine's: bad_request, not_found, conflict, forbidden,
// unavailable, internal) decides the exit status, and a hint says what to
// do next. A bad command line is a bad request the CLI finds itself.

const (
	classBadRequest = "bad_request"
	classInternal   = "internal"
)

// exitStatus maps an error class to the process exit status: 2 for a
// request that is wrong as given (fix the command line and run it again),
// 1 for every other failure. It is the only place exit statuses are
// decided.
func exitStatus(class string) int {
	if class == classBadRequest {
		return 2
	}
	return 1
}

// failure is an error as ucl reports it; with --json it is printed on
// stderr as {"error":{…}}.
type failure struct {
	Message string `json:"message"`
	// Class is the engine's error class (classBadRequest for a bad
	// command line).
	Class string `json:"class"`
	// Codes are the engine's error codes the error matches; "usage" marks
	// a command line the CLI refused before running anything.
	Codes []string `json:"codes,omitempty"`
	Hint  string   `json:"hint,omitempty"`
	Exit  int      `json:"exit"`
}

// describe classifies err; path is the command it came from (for the
// default hint of a bad request).
func describe(err error, path []string) failure {
	f := failure{Message: err.Error(), Class: engineClass(err), Codes: ucl.ErrorCodes(err)}
	var ue *usageError
	if errors.As(err, &ue) {
		f.Class = classBadRequest
		f.Codes = append([]string{"usage"}, f.Codes...)
	}
	var he *hintError
	if errors.As(err, &he) {
		f.Hint = he.hint
	} else {
		f.Hint = defaultHint(err)
	}
	if f.Hint == "" && f.Class == classBadRequest {
		f.Hint = "see `" + strings.Join(append([]string{"ucl", "help"}, path...), " ") + "`"
	}
	f.Exit = exitStatus(f.Class)
	return f
}

// report prints err on stderr (as JSON when asJSON) and returns the exit
// status.
func report(stderr io.Writer, err error, path []string, asJSON bool) int {
	f := describe(err, path)
	if asJSON {
		b, jerr := json.Marshal(struct {
			Error failure `json:"error"`
		}{f})
		if jerr == nil {
			fmt.Fprintf(stderr, "%s\n", b)
			return f.Exit
		}
	}
	fmt.Fprintf(stderr, "ucl: %s\n", f.Message)
	if f.Hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", f.Hint)
	}
	return f.Exit
}

// jsonRequested reports whether the command line asks for --json, looked
// up in the raw arguments: an error may come before any flag is parsed.
func jsonRequested(args []string) bool {
	on := false
	for _, a := range args[min(1, len(args)):] {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		on = true
		if hasVal {
			on, _ = strconv.ParseBool(val)
		}
	}
	return on
}

// hintError carries a hint for the user: what to do next.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hintError{err: err, hint: hint}
}

// usageError is a command line the CLI refuses before running anything
// (class bad_request, exit status 2).
type usageError struct {
	msg string
	err error // the engine or config error it reports, if any
}

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return e.err }

// badValue reports err, caused by a value the command line gave (a file
// that cannot be read, a key that does not parse), as a usage error.
func badValue(err error, hint string) error {
	return &hintError{err: &usageError{msg: err.Error(), err: err}, hint: hint}
}

func usage(hint, format string, a ...any) error {
	var wrapped error
	for _, v := range a {
		if e, ok := v.(error); ok {
			wrapped = e
		}
	}
	return &hintError{err: &usageError{msg: fmt.Sprintf(format, a...), err: wrapped}, hint: hint}
}

func defaultHint(err error) string {
	var ce *log.CorruptionError
	switch {
	case errors.Is(err, log.ErrDamagedTail), errors.Is(err, log.ErrLost):
		return "the log was damaged after these events were acknowledged, so nothing was cut: see `ucl audit verify`; `ucl audit repair` cuts the log back to its last sound event (keeping the cut bytes in the store's corrupt/ folder), and a store mirrored to Arweave can be recovered with `ucl rebuild`"
	case errors.As(err, &ce):
		return "the log is damaged: run `ucl audit verify` for details; a store mirrored to Arweave can be recovered with `ucl rebuild`"
	case errors.Is(err, ucl.ErrOutcomeUnknown):
		return "the store owner died before answering, so whether the command took effect is unknown: check (`ucl status`, `ucl replay --raw`) before running it again"
	case errors.Is(err, log.ErrLocked):
		return "another ucl process is using this store"
	case errors.Is(err, ucl.ErrSealed), errors.Is(err, ucl.ErrBadPassphrase):
		return "the vault key is sealed: give its passphrase in UCL_PASSPHRASE, in the OS keyring (ucl keys seal --keyring) or on the terminal (ucl keys unseal removes the seal)"
	case errors.Is(err, ucl.ErrWrongVaultKey):
		return "pass this store's vault key with --vault-key FILE"
	case errors.Is(err, ucl.ErrNoWallet), errors.Is(err, ucl.ErrBadWallet):
		return "copy the store's Arweave wallet JWK to DIR/wallet.json"
	case errors.Is(err, log.ErrNoKeys):
		return "no vault key here: pass it with --vault-key FILE (or import it with `ucl keys import`)"
	case errors.Is(err, ucl.ErrNotInitialized):
		return "create a store with `ucl init`, or point --dir (UCL_DIR) at an existing one"
	case strings.Contains(err.Error(), "probe embedding model"):
		return "check --embed-url and --embed-model, or pass --embed-dim"
	case strings.Contains(err.Error(), "catch up projections"):
		return "the log is untouched; fix the cause (e.g. the embedding server) and run the command again, it resumes"
	}
	return ""
}

// flagError is a flag the parser refused, with the command it was given
// to (path "" is the app itself, before any command).
type flagError struct {
	err  error
	path []string
}

func (e *flagError) Error() string { return e.err.Error() }

// The standard flag package's parse errors (urfave/cli parses with it).
var (
	reUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	reBadValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)
	reNoValue   = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
)

// explainFlagError turns a parse error into one line and a hint, in the
// words of the command it was given to. args are the command line as
// typed: a command's flag typed before the command is named as such.
func explainFlagError(app *cli.App, fe *flagError, args []string) error {
	cmd := commandAt(app, fe.path)
	where := "ucl"
	if len(fe.path) > 0 {
		where = "ucl " + strings.Join(fe.path, " ")
	}
	helpHint := "see `ucl help` for the global flags"
	if len(fe.path) > 0 {
		helpHint = "see `" + strings.Join(append([]string{"ucl", "help"}, fe.path...), " ") + "` for its flags"
	}
	msg := fe.err.Error()
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		name := m[1]
		names := flagNames(app.Flags)
		if cmd != nil {
			names = append(flagNames(cmd.Flags), names...)
		}
		// A flag of the (sub)command typed after it?
		if later := commandIn(app, args); len(later) > len(fe.path) {
			c := strings.Join(later, " ")
			if slices.Contains(flagNames(commandAt(app, later).Flags), name) {
				return &hintError{err: &usageError{msg: fmt.Sprintf("%s is a flag of `ucl %s`, given before the command", dashed(name), c)},
					hint: fmt.Sprintf("put it after the command: ucl %s … %s", c, flagWithValue(app, later, args, name))}
			}
			// The closest name of the app's and that command's flags; one of
			// the command's is named with where it goes.
			if s := suggest(name, append(flagNames(commandAt(app, later).Flags), names...)); s != "" && !slices.Contains(names, s) {
				return &hintError{err: &usageError{msg: fmt.Sprintf("%s has no flag %s", where, dashed(name))},
					hint: fmt.Sprintf("did you mean %s? It is a flag of `ucl %s`: put it after the command", dashed(s), c)}
			}
		}
		hint := helpHint
		if s := suggest(name, names); s != "" {
			hint = fmt.Sprintf("did you mean %s? (%s)", dashed(s), hint)
		}
		return &hintError{err: &usageError{msg: fmt.Sprintf("%s has no flag %s", where, dashed(name))}, hint: hint}
	}
	if m := reBadValue.FindStringSubmatch(msg); m != nil {
		return &hintError{err: &usageError{msg: fmt.Sprintf("bad value %q for %s: %s", m[1], dashed(m[2]), valueWant(app, cmd, m[2], m[3]))}, hint: helpHint}
	}
	if m := reNoValue.FindStringSubmatch(msg); m != nil {
		return &hintError{err: &usageError{msg: fmt.Sprintf("%s needs a value", dashed(m[1]))}, hint: fmt.Sprintf("%s VALUE (or %s=VALUE); %s", dashed(m[1]), dashed(m[1]), helpHint)}
	}
	return &hintError{err: &usageError{msg: msg}, hint: helpHint}
}

// valueWant says what a flag takes, from its type.
func valueWant(app *cli.App, cmd *cli.Command, name, parseErr string) string {
	fs := app.Flags
	if cmd != nil {
		fs = append(slices.Clone(cmd.Flags), fs...)
	}
	for _, f := range fs {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		switch f.(type) {
		case *cli.IntFlag, *cli.Int64Flag, *cli.IntSliceFlag:
			return "want a whole number"
		case *cli.UintFlag, *cli.Uint64Flag:
			return "want a whole number, 0 or more"
		case *cli.Float64Flag:
			return "want a number"
		case *cli.DurationFlag:
			return "want a duration such as 30s, 5m or 1h"
		case *cli.BoolFlag:
			return "want true or false"
		}
	}
	return parseErr
}

// commandAt is the command path names, nil for the app.
func commandAt(app *cli.App, path []string) *cli.Command {
	var cmd *cli.Command
	cmds := app.Commands
	for _, w := range path {
		cmd = nil
		for _, c := range cmds {
			if c.HasName(w) {
				cmd = c
			}
		}
		if cmd == nil {
			return nil
		}
		cmds = cmd.Subcommands
	}
	return cmd
}

// commandIn is the command args name: from the first word naming a
// command (the value of a global flag is not one), down its subcommands
// (flags between them skipped); nil when no word names a command.
func commandIn(app *cli.App, args []string) []string {
	globals := flagKinds(app.Flags)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if strings.HasPrefix(a, "-") {
			i += flagArity(globals, a)
			continue
		}
		if commandAt(app, []string{a}) == nil {
			continue
		}
		path := []string{a}
		for j := i + 1; j < len(args) && args[j] != "--"; j++ {
			w := args[j]
			if strings.HasPrefix(w, "-") {
				kinds := flagKinds(commandAt(app, path).Flags)
				if _, known := kinds[flagName(w)]; known {
					j += flagArity(kinds, w)
				} else if !strings.Contains(w, "=") && j+1 < len(args) && commandAt(app, append(slices.Clone(path), args[j+1])) == nil {
					j++ // an unknown flag's value, most likely
				}
				continue
			}
			if commandAt(app, append(slices.Clone(path), w)) == nil {
				break
			}
			path = append(path, w)
		}
		return path
	}
	return nil
}

// flagWithValue is how --name was typed in args: with the value that
// followed it when the command's flag takes one.
func flagWithValue(app *cli.App, path, args []string, name string) string {
	for i, a := range args {
		if flagName(a) != name || !strings.HasPrefix(a, "-") {
			continue
		}
		if flagArity(flagKinds(commandAt(app, path).Flags), a) == 1 && i+1 < len(args) {
			return a + " " + args[i+1]
		}
		return a
	}
	return dashed(name)
}

// dashed is a flag name as the docs write it: --k, --kind (the parser
// takes one dash or two alike).
func dashed(name string) string { return "--" + name }

func flagNames(fs []cli.Flag) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Names()...)
	}
	return out
}

func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c.Names()...)
		}
	}
	return out
}

// unknownCommand is the error for a word that names no command under
// parent ("" for the app): with a suggestion when one is close.
func unknownCommand(cmds []*cli.Command, parent, word string) error {
	full := strings.TrimSpace(parent + " " + word)
	hint := "run `ucl help` for the list of commands"
	if parent != "" {
		hint = "run `ucl help " + parent + "` for its subcommands"
	}
	if s := suggest(word, commandNames(cmds)); s != "" {
		hint = fmt.Sprintf("did you mean `ucl %s`? (%s)", strings.TrimSpace(parent+" "+s), hint)
	}
	return usage(hint, "unknown command %q", full)
}

// suggest returns the name closest to word when it is close enough to be
// a typo (an edit distance of at most a third of its length, at least 1)
// or word is a prefix of it; "" otherwise. Ties go to the name first in
// alphabetical order, so the answer does not depend on declaration order.
func suggest(word string, names []string) string {
	if len(word) < 2 {
		return "" // every short name is one edit away
	}
	best, bestD := "", 0
	for _, n := range names {
		if n == word {
			continue
		}
		d := editDistance(word, n)
		if d > max(1, len(word)/3) && !(len(word) >= 2 && strings.HasPrefix(n, word)) {
			continue
		}
		if best == "" || d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (adjacent
// transpositions count one) between a and b, in bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// configError makes a bad setting (flag, environment or DIR/ucl.toml) a
// bad request, the value given being wrong; other errors (an unreadable
// file) keep their class.
func configError(err error, hint string) error {
	if errors.Is(err, config.ErrBadConfig) {
		return withHint(&usageError{msg: err.Error(), err: err}, hint)
	}
	return withHint(err, hint)
}
