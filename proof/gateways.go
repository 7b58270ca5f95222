package proof

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/mirror"
)

// GatewayCheckpoint is one gateway's newest checkpoint of a log, as its
// GraphQL lists it (unverified: what the gateway claims to hold).
type GatewayCheckpoint struct {
	Gateway string `json:"gateway"`
	TxID    string `json:"tx,omitempty"`
	Size    uint64 `json:"size"`
	Root    string `json:"root,omitempty"`
	Height  int64  `json:"height,omitempty"` // 0: pending
	Error   string `json:"error,omitempty"`  // the gateway could not be asked
}

// CompareGateways asks every gateway of ep on its own (a client each, with
// opts) for owner's newest
// checkpoint of logID. disagree is set when two gateways that answered name
// different newest checkpoints: one of them lags, or hides checkpoints (the
// omission one gateway alone cannot reveal). With one gateway it returns
// nothing.
func CompareGateways(ctx context.Context, ep arweave.Endpoints, opts arweave.Options, owner string, logID [16]byte) (views []GatewayCheckpoint, disagree bool) {
	if len(ep.Gateways) < 2 {
		return nil, false
	}
	for _, one := range ep.Each() {
		v := GatewayCheckpoint{Gateway: one.Gateways[0]}
		cps, err := mirror.FindCheckpoints(ctx, arweave.NewClientEndpoints(one, nil, opts), owner, logID)
		switch {
		case err != nil:
			v.Error = err.Error()
		case len(cps) > 0:
			c := cps[len(cps)-1]
			v.TxID, v.Size, v.Root, v.Height = c.ID, c.Size, hex.EncodeToString(c.Root), c.Height
		}
		views = append(views, v)
	}
	var first *GatewayCheckpoint
	for i := range views {
		if views[i].Error != "" {
			continue
		}
		if first == nil {
			first = &views[i]
		} else if views[i].Size != first.Size || views[i].Root != first.Root {
			disagree = true
		}
	}
	return views, disagree
}

// Disagreement says in a sentence how gateways' newest checkpoints differ.
func Disagreement(views []GatewayCheckpoint) string {
	parts := make([]string, 0, len(views))
	for _, v := range views {
		switch {
		case v.Error != "":
			parts = append(parts, fmt.Sprintf("%s could not be asked", v.Gateway))
		case v.TxID == "":
			parts = append(parts, fmt.Sprintf("%s lists none", v.Gateway))
		default:
			parts = append(parts, fmt.Sprintf("%s lists %s (%d events)", v.Gateway, v.TxID, v.Size))
		}
	}
	return "the gateways disagree on the newest checkpoint: " + strings.Join(parts, ", ") +
		"; one of them lags or leaves checkpoints out"
}
