package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
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
other commands refuse to open. While an owner (ucl daemon, serve, mcp)
serves the store, the owner runs the scan and this prints its answer.`,
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
		auditLogCommand,
		auditShowCommand,
		auditCheckpointsCommand,
		auditProveCommand,
		auditVerifyProofCommand,
	},
}

var auditShowCommand = &cli.Command{
	Name:      "show",
	Usage:     "one event: header, hash, body (with the vault key) and tombstone status",
	ArgsUsage: "SEQ",
	Description: `Without the vault key only the plaintext header is shown. Tombstoned
content is withheld and the status says it is hidden, not erased.`,
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return usage("ucl audit show SEQ", "want one seq")
		}
		seq, err := strconv.ParseUint(c.Args().First(), 10, 64)
		if err != nil || seq == 0 {
			return usage("ucl audit show SEQ (a seq from ucl audit log)", "bad seq %q", c.Args().First())
		}
		return withAPI(c, func(api ucl.API) error {
			r, err := api.AuditShow(context.Background(), ucl.AuditShowRequest{Seq: seq})
			if errors.Is(err, log.ErrNotFound) {
				return withHint(err, "ucl status shows the head seq")
			}
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, r)
			}
			printf(c, "seq %d: %s at %s, id %s, by %s\n", r.Seq, r.Type, r.Time, r.ID, r.By)
			printf(c, "hash %s, prev %s, key epoch %d\n", r.Hash, r.Prev, r.KeyEpoch)
			if r.ChunkID != "" {
				printf(c, "chunk %s, session %q, role %q, kind %s, %d bytes\n", r.ChunkID, r.Session, r.Role, r.Kind, r.Bytes)
			}
			if r.Targets != "" {
				printf(c, "targets %s, reason %q, removed %d chunks\n", r.Targets, r.Reason, len(r.Removed))
			}
			if r.TombstonedBy > 0 {
				printf(c, "status: %s (tombstone seq %d)\n", r.Status, r.TombstonedBy)
			} else {
				printf(c, "status: %s\n", r.Status)
			}
			if len(r.Event) > 0 {
				printf(c, "event: %s\n", r.Event)
			}
			return nil
		})
	},
}

func auditRepair(c *cli.Context) error {
	dir := storeDir(c)
	rep, err := ucl.RepairLog(dir)
	if err != nil {
		return withHint(fmt.Errorf("audit repair: %w", err), "nothing was cut unless a report above says so; stop an owner (ucl daemon, ucl mcp) first, or inspect the segment files")
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
	p := newProgress(c, "verify", 0)
	rep, err := ucl.VerifyLog(context.Background(), storeDir(c), engineOptions(c), func(_ string, done, _ uint64) { p.Set(done, 0) })
	p.Done()
	var ce *log.CorruptionError
	if errors.As(err, &ce) && rep != nil {
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
		case errors.Is(err, log.ErrLost):
			what = "acknowledged events are missing at the tail (the store refuses to open; ucl audit repair cuts it, keeping the bytes)"
		case errors.Is(err, log.ErrMalformed), errors.Is(err, log.ErrUnknownType), errors.Is(err, log.ErrUnsupportedVersion):
			what = "malformed event"
		default:
			if rep.Decrypted {
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
		return printJSON(c, map[string]any{"ok": true, "events": rep.Events, "head_seq": rep.HeadSeq, "head_hash": rep.HeadHash.String(),
			"decrypted": rep.Decrypted, "shredded": rep.Shredded})
	}
	how := "checksums and hash chain"
	if rep.Decrypted {
		how += ", every body decrypted and decoded"
		if rep.Shredded > 0 {
			how = fmt.Sprintf("checksums and hash chain, every body decrypted and decoded but %d shredded by key rotations (unreadable by design, not damage)", rep.Shredded)
		}
	}
	printf(c, "ok: %d events verified (%s); head %d %s\n", rep.Events, how, rep.HeadSeq, rep.HeadHash)
	return nil
}

var auditLogCommand = &cli.Command{
	Name:  "log",
	Usage: "who stored, deleted or shared what, and when",
	Description: `One line per event, verified against the chain. Tombstones list the chunks
they removed and their erasure state ("pending": hidden everywhere but still
decryptable from Arweave until a vault-key rotation shreds it; "shredded":
a rotation (ucl keys rotate) wiped the key, nobody can decrypt it). Events
whose content a rotation shredded show as "shredded" (by design, not
damage); after shredding, a tombstone no longer knows which chunk ids it
removed (they were in the shredded events). Without the vault key only the
plaintext headers are shown.`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "type", Usage: "only this event type"},
		&cli.StringFlag{Name: "since", Usage: "append time from (RFC 3339, date or unix ms)"},
		&cli.StringFlag{Name: "until", Usage: "append time before"},
	},
	Action: func(c *cli.Context) error {
		if t := c.String("type"); t != "" {
			if _, err := log.ParseType(t); err != nil {
				return usage("--type takes store, tombstone, share_grant, share_revoke or rekey", "%v", err)
			}
		}
		for _, f := range []string{"since", "until"} {
			if v := c.String(f); v != "" {
				if _, err := ucl.ParseTime(v); err != nil {
					return usage("--"+f+" 2023-05-01", "%v", err)
				}
			}
		}
		req := ucl.AuditLogRequest{Type: c.String("type"), Since: c.String("since"), Until: c.String("until")}
		return withAPI(c, func(api ucl.API) error {
			return api.AuditLog(context.Background(), req, func(e ucl.AuditEntry) error {
				if jsonOut(c) {
					return printJSON(c, e)
				}
				line := fmt.Sprintf("%6d %s %-12s", e.Seq, e.Time[:19], e.Type)
				switch {
				case e.Shredded:
					line += fmt.Sprintf(" shredded (content erased by a key rotation; epoch %d wiped)", e.KeyEpoch)
				case e.Type == "rekey":
					line += fmt.Sprintf(" epoch %d: %d data keys rewrapped", e.RekeyEpoch, e.RekeyKeys)
				case e.Type == "store":
					line += fmt.Sprintf(" chunk %s session=%q %s/%s %dB", e.ChunkID, e.Session, e.Kind, e.Role, e.Bytes)
				case e.Type == "tombstone" && e.Erasure == "shredded" && len(e.Removed) == 0:
					line += fmt.Sprintf(" %s (erasure shredded: the removed chunks went with their content) reason=%q", e.Targets, e.Reason)
				case e.Type == "tombstone":
					line += fmt.Sprintf(" %s removed %d (erasure %s) reason=%q", e.Targets, len(e.Removed), e.Erasure, e.Reason)
				case e.Type == "share_grant" || e.Type == "share_revoke":
					line += " to " + e.Grantee
				}
				printf(c, "%s\n", line)
				return nil
			})
		})
	},
}

var statusCommand = &cli.Command{
	Name:  "status",
	Usage: "show the store: events, head, size, durability, log id, wallet",
	Action: func(c *cli.Context) error {
		return withAPI(c, func(api ucl.API) error {
			st, err := api.Status(context.Background(), ucl.StatusRequest{})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, st)
			}
			printf(c, "store:       %s\n", st.Dir)
			printf(c, "events:      %d (head seq %d)\n", st.Events, st.HeadSeq)
			printf(c, "head hash:   %s\n", st.HeadHash)
			printf(c, "size:        %s (log %s)\n", humanBytes(st.SizeBytes), humanBytes(st.LogBytes))
			printf(c, "durability:  %s\n", st.Durability)
			printf(c, "log id:      %s\n", st.LogID)
			printf(c, "wallet:      %s\n", st.WalletAddress)
			if !st.VaultKey {
				printf(c, "vault key:   missing (raw reads and verification only)\n")
			} else {
				printf(c, "vault key:   epoch %d\n", st.KeyEpoch)
			}
			printf(c, "%-12s %s\n", "mirror:", st.MirrorText)
			if st.Mirror == nil || st.Mirror.CoveredSeq < st.HeadSeq {
				printf(c, "%-12s %s\n", "", "run `ucl sync push` to mirror it to Arweave")
			}
			return nil
		})
	},
}
