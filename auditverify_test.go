package ucl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
)

// VerifyLog gives the same answer through an owner as on the closed
// store, and so does the Client's AuditVerify; damage made while the owner
// runs is named the same way (seq, segment, offset, message) on both.
func TestAuditVerifyAttached(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Append(ctx, AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	c := serve(t, s)
	owned, err := VerifyLog(ctx, dir, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	viaClient, err := c.AuditVerify(ctx, AuditVerifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if owned.Events != 3 || !owned.Decrypted || *owned != *viaClient {
		t.Fatalf("owned %+v, client %+v", owned, viaClient)
	}

	// Flip a body byte of seq 2 under the running owner.
	seg := onlySegment(t, dir)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	orig := append([]byte(nil), b...)
	i := bytes.Index(b, mustRaw(t, s, 2)[log.HeaderSize:])
	if i < 0 {
		t.Fatal("seq 2 not found in its segment")
	}
	b[i+5] ^= 0x40
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	damOwned, errOwned := VerifyLog(ctx, dir, Options{}, nil)
	var ce *log.CorruptionError
	if !errors.As(errOwned, &ce) || ce.Seq != 2 || damOwned == nil || damOwned.Events != 1 {
		t.Fatalf("damage through the owner: %+v %v", damOwned, errOwned)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	damAlone, errAlone := VerifyLog(ctx, dir, Options{}, nil)
	var ce2 *log.CorruptionError
	if !errors.As(errAlone, &ce2) || *damAlone != *damOwned || errAlone.Error() != errOwned.Error() ||
		ce2.Seq != ce.Seq || ce2.Segment != ce.Segment || ce2.Offset != ce.Offset || ce2.Err.Error() != ce.Err.Error() {
		t.Fatalf("alone %+v %v (%+v), owned %+v %v (%+v)", damAlone, errAlone, ce2, damOwned, errOwned, ce)
	}
	// The undamaged log verifies alone as it did through the owner.
	if err := os.WriteFile(seg, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	alone, err := VerifyLog(ctx, dir, Options{}, nil)
	if err != nil || *alone != *owned {
		t.Fatalf("alone %+v %v, owned %+v", alone, err, owned)
	}
}

func onlySegment(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, store.LogDir, "0*"))
	if err != nil || len(m) != 1 {
		t.Fatalf("segments: %v %v", m, err)
	}
	return m[0]
}

func mustRaw(t *testing.T, s *Store, seq uint64) []byte {
	t.Helper()
	raw, err := s.Log().Raw(seq)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The audit_verify answer as it crosses the socket: a result alone, and a
// partial result with the damage.
func TestAuditVerifyGolden(t *testing.T) {
	res := &AuditVerifyResult{Events: 41, HeadSeq: 41, HeadHash: log.Hash{1, 2, 3}, Decrypted: true, Shredded: 2}
	dam := &log.CorruptionError{Seq: 42, Segment: "00000000000000000001", Offset: 8192, Err: log.ErrChecksum}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.Encode(response{Result: res})
	enc.Encode(response{Result: res, Error: toWire(dam)})
	golden(t, "audit_verify.golden", buf.Bytes())
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	got, err := decodeResponse[AuditVerifyResult](bytes.NewReader(lines[1]))
	var ce *log.CorruptionError
	if got == nil || *got != *res || !errors.As(err, &ce) || ce.Seq != 42 || !errors.Is(err, log.ErrChecksum) {
		t.Fatalf("decoded %+v %v", got, err)
	}
}
