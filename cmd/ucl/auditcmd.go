package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
)

var auditCommand = &cli.Command{
	Name:  "audit",
	Usage: "verify and inspect the audit trail",
	Subcommands: []*cli.Command{
		{
			Name:  "verify",
			Usage: "scan the whole log: checksums, hash chain and (with the vault key) every seal",
			Description: `Exits non-zero naming the first damaged seq, its segment file and offset.
Works without the vault key (chain and checksums only) and on a log that
other commands refuse to open.`,
			Action: auditVerify,
		},
		{
			Name:  "repair",
			Usage: "cut a log that other commands refuse back to its last sound event",
			Description: `For a log that open refuses (a damaged entry in the last segment with
valid entries after it, or a file shorter than the events it acknowledged).
Events after the damage are cut from this store's log even if their bytes
are intact; every cut byte is kept in the store's corrupt/ directory, and
the command says exactly which seqs it cut. A store mirrored to Arweave can
get them back with ucl rebuild. Run ucl audit verify first to see the damage.`,
			Action: auditRepair,
		},
	},
}

func auditRepair(c *cli.Context) error {
	dir := storeDir(c)
	rep, err := log.Repair(filepath.Join(dir, store.LogDir), filepath.Join(dir, "corrupt"))
	if err != nil {
		return withHint(fmt.Errorf("audit repair: %w", err), "nothing was cut unless a report above says so; inspect the segment files")
	}
	if jsonOut(c) {
		if rep == nil {
			return printJSON(c, map[string]any{"repaired": false})
		}
		return printJSON(c, map[string]any{"repaired": true, "report": rep})
	}
	if rep == nil {
		printf(c, "the log is sound: nothing to repair\n")
		return nil
	}
	printf(c, "%s\n", rep)
	return nil
}

func auditVerify(c *cli.Context) error {
	dir := storeDir(c)
	m, err := store.ReadMeta(dir)
	if err != nil {
		return err
	}
	kr, err := loadKeysFor(c, m)
	if err != nil {
		return err
	}
	p := newProgress(c, "verify", 0)
	rep, err := log.VerifyDir(context.Background(), filepath.Join(dir, store.LogDir), kr, func(seq uint64) { p.Set(seq, 0) })
	p.Done()
	var ce *log.CorruptionError
	if errors.As(err, &ce) {
		what := "damaged"
		switch {
		case errors.Is(err, log.ErrChecksum):
			what = "checksum mismatch (a changed or flipped byte)"
		case errors.Is(err, log.ErrChainBroken):
			what = "hash chain broken"
		case errors.Is(err, log.ErrTorn):
			what = "torn write at the tail (the next open repairs it)"
		case errors.Is(err, log.ErrDamagedTail):
			what = "damaged entry with valid entries after it (ucl audit repair cuts it, keeping the bytes)"
		case errors.Is(err, log.ErrMalformed), errors.Is(err, log.ErrUnknownType), errors.Is(err, log.ErrUnsupportedVersion):
			what = "malformed event"
		default:
			if kr != nil {
				what = "seal does not verify (body or header changed, or wrong key)"
			}
		}
		if jsonOut(c) {
			printJSON(c, map[string]any{"ok": false, "bad_seq": ce.Seq, "segment": ce.Segment, "offset": ce.Offset,
				"problem": what, "error": ce.Err.Error(), "verified_events": rep.Events})
		}
		return withHint(fmt.Errorf("audit verify: seq %d is bad: %s (segment %s, offset %d); events 1..%d verify", ce.Seq, what, ce.Segment, ce.Offset, rep.Events),
			"restore the store from Arweave with `ucl rebuild`, or inspect the segment file; nothing was changed")
	}
	if err != nil {
		return err
	}
	if jsonOut(c) {
		return printJSON(c, map[string]any{"ok": true, "events": rep.Events, "head_seq": rep.Head, "head_hash": rep.HeadHash.String(), "decrypted": rep.Decrypted})
	}
	how := "checksums and hash chain"
	if rep.Decrypted {
		how += ", every body decrypted and decoded"
	}
	printf(c, "ok: %d events verified (%s); head %d %s\n", rep.Events, how, rep.Head, rep.HeadHash)
	return nil
}

var statusCommand = &cli.Command{
	Name:  "status",
	Usage: "show the store: events, head, size, durability, log id, wallet",
	Action: func(c *cli.Context) error {
		s, err := openStoreMaybeKeys(c)
		if err != nil {
			return err
		}
		defer s.Close()
		head, hash := s.Log.Head()
		size := store.DiskUsage(s.Dir)
		logSize := store.DiskUsage(s.Path(store.LogDir))
		st := map[string]any{
			"dir": s.Dir, "events": head, "head_seq": head, "head_hash": hash.String(),
			"size_bytes": size, "log_bytes": logSize, "durability": s.Log.Durability().String(),
			"log_id": s.Meta.LogID, "wallet_address": s.Meta.WalletAddress, "vault_key": s.Keys != nil,
		}
		for _, f := range statusExtras {
			f(c, s, st)
		}
		if jsonOut(c) {
			return printJSON(c, st)
		}
		printf(c, "store:       %s\n", s.Dir)
		printf(c, "events:      %d (head seq %d)\n", head, head)
		printf(c, "head hash:   %s\n", hash)
		printf(c, "size:        %s (log %s)\n", humanBytes(size), humanBytes(logSize))
		printf(c, "durability:  %s\n", s.Log.Durability())
		printf(c, "log id:      %s\n", s.Meta.LogID)
		printf(c, "wallet:      %s\n", s.Meta.WalletAddress)
		if s.Keys == nil {
			printf(c, "vault key:   missing (raw reads and verification only)\n")
		}
		for _, k := range []string{"projections", "mirror"} {
			if v, ok := st[k+"_text"]; ok {
				printf(c, "%-12s %s\n", k+":", v)
			}
		}
		return nil
	},
}

// statusExtras lets other command groups add to `ucl status`.
var statusExtras []func(*cli.Context, *store.Store, map[string]any)

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func init() { register(auditCommand, statusCommand) }
