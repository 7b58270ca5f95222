package main

// Audit proof commands: `ucl audit checkpoints`, `ucl audit prove`,
// `ucl audit verify-proof` (which needs no store).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/proof"
)

var auditCheckpointsCommand = &cli.Command{
	Name:  "checkpoints",
	Usage: "list the Merkle checkpoints anchored on Arweave for this log",
	Flags: []cli.Flag{syncGatewayFlag()},
	Action: func(c *cli.Context) error {
		return withAPI(c, func(api ucl.API) error {
			ctx, cancel := signalContext()
			defer cancel()
			r, err := api.Checkpoints(ctx, ucl.CheckpointsRequest{Gateway: gatewaySetting(c)})
			if err != nil {
				return mirrorError(err, "ucl audit checkpoints")
			}
			if jsonOut(c) {
				return printJSON(c, r)
			}
			if len(r.Checkpoints) == 0 {
				printf(c, "no checkpoint of log %s anchored by %s yet (ucl sync push anchors one)\n", r.LogID, r.Owner)
				return nil
			}
			printf(c, "%-10s  %-64s  %-43s  %s\n", "SIZE", "ROOT", "TX", "HEIGHT")
			for _, cp := range r.Checkpoints {
				h := strconv.FormatInt(cp.Height, 10)
				if cp.Pending {
					h = "pending"
				}
				printf(c, "%-10d  %-64s  %-43s  %s\n", cp.Size, cp.Root, cp.TxID, h)
			}
			return nil
		})
	},
}

var auditProveCommand = &cli.Command{
	Name:      "prove",
	Usage:     "write a self-contained proof that event SEQ is in the log as anchored on Arweave",
	ArgsUsage: "SEQ",
	Description: `The proof (JSON) holds the event's header and still-encrypted body, its hash,
the inclusion path to the newest anchored checkpoint that covers it, the
signed checkpoint and the Arweave transaction anchoring it. Anyone can check
it with ucl audit verify-proof, without this store or its keys.`,
	Flags: []cli.Flag{syncGatewayFlag(), &cli.StringFlag{Name: "out", Usage: "write the proof to FILE instead of standard output"}},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return usage("ucl audit prove SEQ [--out FILE]", "expected one SEQ")
		}
		seq, err := strconv.ParseUint(c.Args().First(), 10, 64)
		if err != nil || seq == 0 {
			return usage("SEQ is an event number from 1", "bad SEQ %q", c.Args().First())
		}
		return withAPI(c, func(api ucl.API) error {
			ctx, cancel := signalContext()
			defer cancel()
			p, err := api.Prove(ctx, ucl.ProveRequest{Seq: seq, Gateway: gatewaySetting(c)})
			switch {
			case errors.Is(err, proof.ErrNotAnchored):
				return withHint(err, "run `ucl sync push` to mirror the log and anchor a checkpoint, then prove again")
			case errors.Is(err, proof.ErrCheckpointDiverged):
				return withHint(err, "this store's log is not the history its wallet anchored; nothing can be proven from it")
			case err != nil:
				return mirrorError(err, "ucl audit prove")
			}
			b, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				return err
			}
			b = append(b, '\n')
			out := c.String("out")
			if out == "" {
				_, err := c.App.Writer.Write(b)
				return err
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return fmt.Errorf("audit prove: %w", err)
			}
			if jsonOut(c) {
				return printJSON(c, map[string]any{"seq": p.Seq, "out": out, "checkpoint_tx": p.CheckpointTx, "tree_size": p.TreeSize})
			}
			printf(c, "proof of event %d against the checkpoint of %d events (Arweave transaction %s) written to %s\n", p.Seq, p.TreeSize, p.CheckpointTx, out)
			return nil
		})
	},
}

var auditVerifyProofCommand = &cli.Command{
	Name:      "verify-proof",
	Usage:     "verify a proof file against Arweave (needs no store and no key)",
	ArgsUsage: "FILE",
	Description: `Checks the checkpoint note's signature, the event's header against its hash
and the inclusion path; fetches the anchoring transaction and checks its
RSA-PSS signature, that its key is the owner's address, its data and tags;
and checks that every later checkpoint the owner anchored for the log is
consistent with the proof's (a history rewritten after the proof is caught)
and links to checkpoints the gateway lists (a checkpoint the gateway hides
between them is caught). It prints the gateway's newest checkpoint: hiding
the newest ones cannot be caught through one gateway: with several
(--gateway A,B or [arweave] gateways) each one's newest checkpoint is
compared, and a disagreement is reported.`,
	Flags: []cli.Flag{syncGatewayFlag()},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return usage("ucl audit verify-proof FILE [--gateway URL]", "expected one FILE")
		}
		b, err := os.ReadFile(c.Args().First())
		if err != nil {
			return badValue(fmt.Errorf("audit verify-proof: %w", err), "give the proof file `ucl audit prove SEQ --out FILE` wrote")
		}
		gw := gatewaySetting(c)
		if err := ucl.CheckGateway(gw); err != nil {
			return gatewayUsage(err)
		}
		if gw == "" {
			gw = ucl.RememberedArweave(storeDir(c)).Gateway // "" : the default
		}
		ctx, cancel := signalContext()
		defer cancel()
		r, err := ucl.VerifyProof(ctx, proof.VerifyRequest{Proof: b, Gateway: gw})
		if err != nil {
			if jsonOut(c) {
				printJSON(c, map[string]any{"ok": false, "error": err.Error(), "codes": ucl.ErrorCodes(err)})
			}
			if errors.Is(err, proof.ErrProofRejected) {
				return err
			}
			return withHint(err, "the proof was not checked to the end: try again or another --gateway")
		}
		if jsonOut(c) {
			return printJSON(c, struct {
				OK bool `json:"ok"`
				*proof.VerifyResult
			}{true, r})
		}
		printf(c, "%s\n", r.Sentence)
		return nil
	},
}
