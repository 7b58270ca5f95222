package ucl

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
)

// AuditVerifyRequest asks for a scan of the whole log.
type AuditVerifyRequest struct {
	Progress Progress `json:"-"`
}

// AuditVerifyResult is what a full scan of the log verified. With an
// error naming damage (a *log.CorruptionError) it says how far the log
// verifies: events 1..Events.
type AuditVerifyResult struct {
	Events   uint64   `json:"events"`
	HeadSeq  uint64   `json:"head_seq"`
	HeadHash log.Hash `json:"head_hash"`
	// Decrypted says every body was opened with the vault key (else only
	// checksums and the hash chain were checked).
	Decrypted bool `json:"decrypted"`
	// Shredded counts events whose content a key rotation shredded
	// (unreadable by design, not damage).
	Shredded uint64 `json:"shredded"`
}

func auditVerifyResult(rep log.VerifyReport) *AuditVerifyResult {
	return &AuditVerifyResult{Events: rep.Events, HeadSeq: rep.Head, HeadHash: rep.HeadHash, Decrypted: rep.Decrypted, Shredded: rep.Shredded}
}

func verifyProgress(p Progress) func(seq uint64) {
	if p == nil {
		return nil
	}
	return func(seq uint64) { p("verify", seq, 0) }
}

// AuditVerify scans the whole log as VerifyLog does, through the log this
// Store holds open: events 1..head as of the call (appends may go on), with
// the store's vault key when it has one. It returns the result with the
// error when the scan finds damage.
func (s *Store) AuditVerify(ctx context.Context, req AuditVerifyRequest) (*AuditVerifyResult, error) {
	rep, err := s.st.Log.Verify(ctx, verifyProgress(req.Progress))
	return auditVerifyResult(rep), err
}

// AuditVerify implements API through the owner.
func (c *Client) AuditVerify(ctx context.Context, req AuditVerifyRequest) (*AuditVerifyResult, error) {
	return call[AuditVerifyResult](c, ctx, "audit_verify", req)
}

// VerifyLog scans the whole log of the store in dir: checksums, hash chain
// and, with the vault key (when available), every seal. It names the first
// damage as a *log.CorruptionError and returns the result with it. When a
// process serves the store, its owner runs the scan (AuditVerify);
// otherwise this process scans the files itself, under the store lock,
// without opening the log, so it works on a log that Open refuses. A store
// held by a process that does not serve is waited for up to AttachWait.
func VerifyLog(ctx context.Context, dir string, o Options, progress Progress) (*AuditVerifyResult, error) {
	deadline := time.Now().Add(AttachWait)
	for {
		if c, err := Dial(dir); err == nil {
			res, err := c.AuditVerify(ctx, AuditVerifyRequest{})
			c.Close()
			// An owner that exited before reading the request leaves the
			// store to this process (or to the next owner).
			if !OwnerGone(err) || time.Now().After(deadline) {
				return res, err
			}
			continue
		}
		kr, err := LoadVaultKey(dir, o)
		if err != nil {
			return nil, err
		}
		rep, err := log.VerifyDir(ctx, filepath.Join(dir, store.LogDir), kr, verifyProgress(progress))
		if errors.Is(err, log.ErrLocked) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var ce *log.CorruptionError
		if err != nil && !errors.As(err, &ce) {
			return nil, err
		}
		return auditVerifyResult(rep), err
	}
}
