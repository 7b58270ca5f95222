package ucl

import (
	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/internal/mirror"
)

// What front ends need of the Arweave mirror and its transport, so that
// they import neither internal/mirror nor arweave: the wallet, the check
// of a gateway URL, and the errors they add hints to.

// Wallet is an Arweave wallet (the one wallet type, arweave.Wallet).
type Wallet = arweave.Wallet

// LoadWallet reads an Arweave JWK file.
func LoadWallet(path string) (*Wallet, error) { return arweave.LoadWallet(path) }

// FormatAR writes winston as AR.
func FormatAR(winston int64) string { return arweave.FormatAR(winston) }

// TurboUploadURL is ArDrive Turbo's upload service, the default bundler.
const TurboUploadURL = arweave.TurboUploadURL

// DefaultSegmentBytes is the default cap of a segment (PushRequest).
const DefaultSegmentBytes = mirror.DefaultSegmentBytes

// CheckGateway returns an error unless gateway is "" (the remembered or
// default gateway) or an endpoint list: http(s) URLs separated by commas,
// one of them possibly graphql=URL.
func CheckGateway(gateway string) error {
	if gateway == "" {
		return nil
	}
	_, err := arweave.ParseEndpoints(gateway)
	return err
}

// CheckURL returns an error unless u is an http(s) URL (a bundler's).
func CheckURL(u string) error {
	_, err := arweave.CheckURL(u)
	return err
}

var (
	// ErrMirrorDiverged is returned (inside a *mirror.DivergedError) when a
	// push would fork the mirror: the local log is not the history already
	// on Arweave.
	ErrMirrorDiverged = mirror.ErrDiverged
	// ErrMirrorStateCorrupt is returned when the mirror state file is
	// damaged; it is derived data and may be deleted.
	ErrMirrorStateCorrupt = mirror.ErrMirrorStateCorrupt
	// ErrForked is returned by Rebuild when two histories were uploaded for
	// the same seqs and no branch was chosen.
	ErrForked = mirror.ErrForked
	// ErrBranchNotFound is returned by Rebuild when RebuildOptions.Branch
	// names no segment of the log.
	ErrBranchNotFound = mirror.ErrBranchNotFound
	// ErrGatewayUnavailable is returned when the gateway failed (connection
	// errors, 5xx, 429) on every retry.
	ErrGatewayUnavailable = arweave.ErrUnavailable
	// ErrGatewayTimeout is returned when the gateway did not answer in time.
	ErrGatewayTimeout = arweave.ErrTimeout
	// ErrGatewayRejected is returned when the gateway refused a request
	// (4xx other than 404), e.g. a wallet without funds.
	ErrGatewayRejected = arweave.ErrRejected
	// ErrGatewayGraphQL is returned when the gateway's GraphQL endpoint
	// answered with errors or paged without end.
	ErrGatewayGraphQL = arweave.ErrGraphQL
	// ErrBundlerPayment is returned when a bundler wants payment for an
	// upload (HTTP 402: over its free size, no credits).
	ErrBundlerPayment = arweave.ErrPaymentRequired
	// ErrTxSignature is returned when a transaction fetched from the
	// gateway does not verify (altered, or not the claimed wallet's).
	ErrTxSignature = arweave.ErrTxSignature
)

// GapError names the seqs missing from the mirror (Rebuild).
type GapError = mirror.GapError

// TxRejectedError names a transaction Rebuild refused and why.
type TxRejectedError = mirror.TxRejectedError
