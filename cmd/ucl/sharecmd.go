package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/share"
)

var shareCommand = &cli.Command{
	Name:  "share",
	Usage: "share memory with another Arweave wallet, and receive what others shared",
	Description: `A grant gives one Arweave address the keys of a scope of live chunks. It is
an event in this log; the next ` + "`ucl sync push`" + ` mirrors it and sends it to the
grantee, who receives it with ` + "`ucl share pull`" + `. Docs: docs/sharing.md.`,
	Subcommands: []*cli.Command{shareGrantCommand, shareRevokeCommand, shareListCommand, sharePullCommand},
}

var shareGrantCommand = &cli.Command{
	Name:      "grant",
	Usage:     "grant a session, chunks, a document or a time range to an Arweave address",
	ArgsUsage: " ",
	Description: `Scope: --chunk IDs and --document PARENT add chunks; --session and
--since/--until select the live chunks matching both. Only chunks live now
are granted, unless --follow (with --session): then chunks stored later in
the session are sent too, by each sync push, until the grant is revoked.
The grantee's RSA key is taken from the gateway (the owner of any
transaction of the address, checked against it) or from --key FILE (the
grantee's wallet JWK or its public half).`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "to", Usage: "the grantee's Arweave address"},
		&cli.StringFlag{Name: "session", Usage: "session id"},
		&cli.StringSliceFlag{Name: "chunk", Usage: "chunk id (repeatable)"},
		&cli.StringSliceFlag{Name: "document", Usage: "chunk parent of a document (repeatable)"},
		&cli.StringFlag{Name: "since", Usage: "content time range start (inclusive)"},
		&cli.StringFlag{Name: "until", Usage: "content time range end (exclusive)"},
		&cli.StringFlag{Name: "note", Usage: "a note to the grantee"},
		&cli.BoolFlag{Name: "follow", Usage: "also grant the chunks stored later in --session, until revoked"},
		&cli.StringFlag{Name: "key", Usage: "the grantee's public key (JWK file) instead of the gateway's"},
		syncGatewayFlag(),
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usage("the scope is given by flags: --session, --chunk, --document, --since/--until", "unexpected argument %q", c.Args().First())
		}
		if c.String("to") == "" {
			return usage("name the grantee: --to ADDRESS (its 43-character Arweave address)", "no grantee")
		}
		req := ucl.ShareGrantRequest{To: c.String("to"), Session: c.String("session"), Chunks: c.StringSlice("chunk"),
			Documents: c.StringSlice("document"), Since: c.String("since"), Until: c.String("until"), Note: c.String("note"),
			Gateway: gatewaySetting(c), Follow: c.Bool("follow")}
		if req.Follow && req.Session == "" {
			return usage("--follow follows a session: add --session S", "--follow without --session")
		}
		if req.Session == "" && len(req.Chunks) == 0 && len(req.Documents) == 0 && req.Since == "" && req.Until == "" {
			return usage("say what to share: --session S, --chunk ID, --document PARENT or --since/--until", "empty scope")
		}
		if f := c.String("key"); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return usage("--key takes the grantee's wallet JWK file or its public half", "%v", err)
			}
			req.Key = string(b)
		}
		return withAPI(c, func(api ucl.API) error {
			ctx, cancel := signalContext()
			defer cancel()
			res, err := api.ShareGrant(ctx, req)
			switch {
			case errors.Is(err, share.ErrBadAddress):
				return withHint(err, "an Arweave address is 43 characters of base64url (the grantee's `ucl status` shows it); nothing was written")
			case errors.Is(err, share.ErrNoGranteeKey):
				return withHint(err, "the gateway knows no transaction from that address (the grantee can run `ucl sync push` once), or pass its public key with --key FILE; nothing was written")
			case errors.Is(err, share.ErrEmptyScope):
				return withHint(err, "nothing was written; check the ids with `ucl query` or `ucl session list`")
			case err != nil:
				return withHint(err, gatewayHint(err, "ucl share grant"))
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			follow := ""
			if res.Follow {
				follow = ", and what is stored later in the session"
			}
			printf(c, "grant %s (seq %d): %d chunk(s)%s to %s (key from the %s)\n", res.Grant, res.Seq, len(res.Chunks), follow, res.Grantee, res.KeyFrom)
			fmt.Fprintln(c.App.ErrWriter, "note: the grantee receives it after your next `ucl sync push`, with `ucl share pull`.")
			return nil
		})
	},
}

var shareRevokeCommand = &cli.Command{
	Name:        "revoke",
	Usage:       "revoke a grant",
	ArgsUsage:   "GRANT_ID",
	Description: share.RevokeNote,
	Flags:       []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why (kept in the audit trail)"}},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return usage("ucl share revoke GRANT_ID (ids in `ucl share list`)", "want one grant id")
		}
		return withAPI(c, func(api ucl.API) error {
			ctx, cancel := signalContext()
			defer cancel()
			res, err := api.ShareRevoke(ctx, ucl.ShareRevokeRequest{Grant: c.Args().First(), Reason: c.String("reason")})
			if errors.Is(err, share.ErrUnknownGrant) {
				return withHint(err, "`ucl share list` shows the grants and their status; nothing was written")
			}
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			printf(c, "revoked grant %s to %s (seq %d)\n", res.Grant, res.Grantee, res.Seq)
			fmt.Fprintln(c.App.ErrWriter, res.Note)
			return nil
		})
	},
}

var shareListCommand = &cli.Command{
	Name:  "list",
	Usage: "list the grants given (from this log) and received (as of the last pull)",
	Action: func(c *cli.Context) error {
		return withAPI(c, func(api ucl.API) error {
			ctx, cancel := signalContext()
			defer cancel()
			res, err := api.ShareList(ctx, ucl.ShareListRequest{})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, res)
			}
			printf(c, "given: %d\n", len(res.Given))
			for _, g := range res.Given {
				sent := "not sent yet (sync push)"
				if g.Sent {
					sent = "sent"
				}
				printf(c, "  %s  to %s  %d chunk(s)  %s, %s%s\n", g.Grant, g.Grantee, g.Chunks, g.Status, sent, noteSuffix(g.Note))
			}
			printf(c, "received: %d\n", len(res.Received))
			for _, g := range res.Received {
				printf(c, "  %s  from %s  %d chunk(s) (%d hidden by the grantor)  %s%s\n", g.Grant, g.Grantor, len(g.Chunks), len(g.Hidden), g.Status, noteSuffix(g.Note))
			}
			return nil
		})
	},
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return "  “" + strings.ReplaceAll(n, "\n", " ") + "”"
}

var sharePullCommand = &cli.Command{
	Name:  "pull",
	Usage: "receive the grants addressed to this store's wallet",
	Description: `Finds the grants addressed to this wallet on the gateway, verifies each
grantor's log (transaction signatures, owner, Merkle roots, chain, anchored
checkpoint), decrypts only what was granted, and makes it searchable:
` + "`ucl query --origin shared|all`" + `. The grantor's events are kept in DIR/shared,
never in this store's log. Chunks the grantor tombstoned since disappear.`,
	Flags: []cli.Flag{syncGatewayFlag()},
	Action: func(c *cli.Context) error {
		return withAPI(c, func(api ucl.API) error {
			ctx, cancel := signalContext()
			defer cancel()
			res, err := api.SharePull(ctx, ucl.SharePullRequest{Gateway: gatewaySetting(c)})
			if res != nil {
				if jsonOut(c) {
					if perr := printJSON(c, res); perr != nil {
						return perr
					}
				} else {
					printf(c, "received %d grant(s), %d shared chunk(s) searchable (ucl query --origin shared)\n", len(res.Grants), res.Chunks)
					for _, g := range res.Grants {
						printf(c, "  %s  from %s  %d chunk(s)  %s%s\n", g.Grant, g.Grantor, len(g.Chunks), g.Status, noteSuffix(g.Note))
					}
					for _, r := range res.Rejected {
						fmt.Fprintf(c.App.ErrWriter, "rejected %s: %s\n", firstOf(r.Grant, r.TxID), r.Reason)
					}
				}
			}
			switch {
			case errors.Is(err, share.ErrShareRejected):
				return withHint(err, "what did not verify was left out and nothing of it was stored; the rest was received")
			case errors.Is(err, crypto.ErrNotForThisWallet):
				return withHint(err, "the grant is for another wallet")
			case err != nil:
				return withHint(err, gatewayHint(err, "ucl share pull"))
			}
			return nil
		})
	},
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
