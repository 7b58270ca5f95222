package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/log"
)

// auditEntry is one line of `ucl audit log`.
type auditEntry struct {
	Seq      uint64   `json:"seq"`
	Time     string   `json:"time"`
	Type     string   `json:"type"`
	ID       log.ID   `json:"id"`
	Hash     log.Hash `json:"hash"`
	By       string   `json:"by"` // the store owner's Arweave address
	KeyEpoch uint32   `json:"key_epoch"`
	// store
	ChunkID string `json:"chunk_id,omitempty"`
	Session string `json:"session,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Role    string `json:"role,omitempty"`
	Bytes   int    `json:"content_bytes,omitempty"`
	// tombstone
	Targets string   `json:"targets,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Erasure string   `json:"erasure,omitempty"` // "pending": tombstoned, not shredded
	// share
	Grantee string `json:"grantee,omitempty"`
}

var auditLogCommand = &cli.Command{
	Name:  "log",
	Usage: "who stored, deleted or shared what, and when",
	Description: `One line per event, verified against the chain. Tombstones list the chunks
they removed and their erasure state ("pending": hidden everywhere but still
decryptable from Arweave until a vault-key rotation shreds it). Without the
vault key only the plaintext headers are shown.`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "type", Usage: "only this event type"},
		&cli.StringFlag{Name: "since", Usage: "append time from (RFC 3339, date or unix ms)"},
		&cli.StringFlag{Name: "until", Usage: "append time before"},
	},
	Action: func(c *cli.Context) error {
		var typ log.Type
		var err error
		if t := c.String("type"); t != "" {
			if typ, err = log.ParseType(t); err != nil {
				return usage("--type takes store, tombstone, share_grant, share_revoke or rekey", "%v", err)
			}
		}
		var since, until int64
		if v := c.String("since"); v != "" {
			if since, err = ingest.ParseTime(v); err != nil {
				return usage("--since 2023-05-01", "%v", err)
			}
		}
		if v := c.String("until"); v != "" {
			if until, err = ingest.ParseTime(v); err != nil {
				return usage("--until 2023-06-01", "%v", err)
			}
		}
		s, err := openStoreMaybeKeys(c)
		if err != nil {
			return err
		}
		defer s.Close()
		keep := func(h log.Header) bool {
			return (typ == 0 || h.Type == typ) && (since == 0 || h.Time >= since) && (until == 0 || h.Time < until)
		}
		emit := func(e auditEntry) error {
			if jsonOut(c) {
				return printJSON(c, e)
			}
			line := fmt.Sprintf("%6d %s %-12s", e.Seq, e.Time[:19], e.Type)
			switch e.Type {
			case "store":
				line += fmt.Sprintf(" chunk %s session=%q %s/%s %dB", e.ChunkID, e.Session, e.Kind, e.Role, e.Bytes)
			case "tombstone":
				line += fmt.Sprintf(" %s removed %d (erasure %s) reason=%q", e.Targets, len(e.Removed), e.Erasure, e.Reason)
			case "share_grant", "share_revoke":
				line += " to " + e.Grantee
			}
			printf(c, "%s\n", line)
			return nil
		}
		ctx := context.Background()
		by := s.Meta.WalletAddress
		if !s.Log.HasKeys() {
			return s.Log.Records(ctx, 0, 0, func(r *log.Record) error {
				if !keep(r.Header) {
					return nil
				}
				return emit(auditEntry{Seq: r.Header.Seq, Time: log.FormatTime(r.Header.Time), Type: r.Header.Type.String(),
					ID: r.Header.ID, Hash: r.Hash, By: by, KeyEpoch: r.Header.KeyEpoch})
			})
		}
		tr := log.NewTombstoneTracker()
		return s.Log.Events(ctx, 0, 0, func(e *log.Event) error {
			removed := tr.Observe(e)
			if !keep(e.Header) {
				return nil
			}
			a := auditEntry{Seq: e.Seq, Time: log.FormatTime(e.Time), Type: e.Type.String(), ID: e.ID, Hash: e.Hash, By: by, KeyEpoch: e.KeyEpoch}
			switch b := e.Body.(type) {
			case *log.Store:
				a.ChunkID, a.Session, a.Kind, a.Role, a.Bytes = b.ChunkID, b.Session, b.Kind.String(), b.Role, len(b.Content)
			case *log.Tombstone:
				var t []string
				if len(b.Chunks) > 0 {
					t = append(t, fmt.Sprintf("chunks=%d", len(b.Chunks)))
				}
				if b.Session != "" {
					t = append(t, "session="+b.Session)
				}
				if b.From != 0 || b.To != 0 {
					t = append(t, fmt.Sprintf("content %s..%s", log.FormatTime(b.From), log.FormatTime(b.To)))
				}
				a.Targets, a.Reason, a.Removed, a.Erasure = strings.Join(t, " "), b.Reason, removed, "pending"
			case *log.ShareGrant:
				a.Grantee = b.Grantee
			case *log.ShareRevoke:
				a.Grantee = b.Grantee
			}
			return emit(a)
		})
	},
}

func init() { auditCommand.Subcommands = append(auditCommand.Subcommands, auditLogCommand) }
