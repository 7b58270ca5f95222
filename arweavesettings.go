package ucl

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// arweaveFile remembers where the store's mirror lives (DIR/arweave.json):
// the gateway endpoints and the bundler of the last successful push (or of
// a rebuild), so later commands that talk to Arweave use them without
// being told again.
const arweaveFile = "arweave.json"

// Push modes (PushRequest.Via).
const (
	ViaL1      = "l1"      // one L1 transaction per segment, paid from the wallet
	ViaBundle  = "bundle"  // one ANS-104 bundle per batch, posted as an L1 transaction
	ViaBundler = "bundler" // one data item per segment through a bundler, paid by it
)

// BundlerSegmentBytes is the default segment cap through a bundler: a
// segment's data item (its data plus a header of about 1 KiB and tags
// under 2 KiB) stays under the bundler's free size (arweave.FreeItemBytes).
const BundlerSegmentBytes = arweave.FreeItemBytes - 4<<10

// ArweaveSettings are the remembered endpoints.
type ArweaveSettings struct {
	// Gateway is an endpoint list (arweave.ParseEndpoints): data gateways
	// and optionally graphql=URL.
	Gateway string `json:"gateway,omitempty"`
	// Bundler is the bundler pushes go through, "" for L1.
	Bundler string `json:"bundler,omitempty"`
}

// RememberedArweave reads DIR/arweave.json. A missing or unreadable file
// remembers nothing (it is a convenience, rewritten by the next push).
func RememberedArweave(dir string) ArweaveSettings {
	var a ArweaveSettings
	f, err := os.Open(filepath.Join(dir, arweaveFile))
	if err != nil {
		return a
	}
	defer f.Close()
	const limit = 64 << 10 // two URL lists; anything longer is not ours
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil || len(b) > limit || json.Unmarshal(b, &a) != nil {
		return ArweaveSettings{}
	}
	if _, err := arweave.ParseEndpoints(a.Gateway); err != nil {
		a.Gateway = ""
	}
	if _, err := arweave.CheckURL(a.Bundler); err != nil {
		a.Bundler = ""
	}
	return a
}

// rememberArweave writes DIR/arweave.json when a changes it.
func rememberArweave(dir string, a ArweaveSettings) error {
	if RememberedArweave(dir) == a {
		return nil
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, arweaveFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("remember the gateway: %w", err)
	}
	return nil
}

// gatewayFor is the endpoint list a request uses: its own, else the
// remembered one, else DefaultGateway.
func (s *Store) gatewayFor(req string) string {
	if req != "" {
		return req
	}
	if g := RememberedArweave(s.st.Dir).Gateway; g != "" {
		return g
	}
	return DefaultGateway
}

// pushVia resolves a push's mode and bundler: the request's, else the
// remembered bundler, else L1.
func (s *Store) pushVia(req PushRequest) (via, bundler string, err error) {
	via, bundler = req.Via, req.Bundler
	if req.Bundle {
		if via != "" && via != ViaBundle {
			return "", "", badRequest("bundle and via %q disagree", via)
		}
		via = ViaBundle
	}
	rem := RememberedArweave(s.st.Dir)
	switch via {
	case "":
		via = ViaL1
		if bundler != "" || rem.Bundler != "" {
			via = ViaBundler
		}
	case ViaL1, ViaBundle:
		if bundler != "" {
			return "", "", badRequest("a bundler is only used with via %q", ViaBundler)
		}
	case ViaBundler:
	default:
		return "", "", badRequest("unknown push mode %q (want %s, %s or %s)", via, ViaL1, ViaBundle, ViaBundler)
	}
	if via == ViaBundler && bundler == "" {
		bundler = rem.Bundler
		if bundler == "" {
			bundler = arweave.TurboUploadURL
		}
	}
	if bundler != "" {
		if _, err := arweave.CheckURL(bundler); err != nil {
			return "", "", badRequest("%v", err)
		}
	}
	return via, bundler, nil
}
