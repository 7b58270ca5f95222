package arweave

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/everFinance/goar/types"
	"github.com/everFinance/goar/utils"
)

var (
	// ErrTxSignature is returned when a fetched transaction's id, RSA-PSS
	// signature, owner address or data root does not verify.
	ErrTxSignature = errors.New("arweave: transaction does not verify")
	// ErrTxPending is returned by FetchVerifiedTx when the gateway holds
	// the transaction as pending and does not serve its fields yet (a
	// node's 202 answer): it cannot be checked until it is mined.
	ErrTxPending = errors.New("arweave: transaction pending, its fields not served yet")
)

// VerifiedTx is a transaction whose signature, owner and data were checked
// here, trusting nothing the gateway says about them.
type VerifiedTx struct {
	ID      string
	Owner   string // address: base64url(SHA-256(owner modulus))
	Tags    []Tag
	Data    []byte
	Height  int64 // block height, 0 when pending (the one fact taken from the gateway)
	Pending bool
}

// FetchVerifiedTx fetches transaction id (GET /tx/{id}) and its data
// (GET /{id}, at most limit bytes), and checks that the id is the hash of
// the signature, that the RSA-PSS signature verifies under the owner key
// over the transaction (tags and data root included), and that the data
// hashes to the signed data root. The owner address is computed from the
// key, not taken from the gateway.
func (c *Client) FetchVerifiedTx(ctx context.Context, id string, limit int64) (*VerifiedTx, error) {
	if !validID(id) {
		return nil, fmt.Errorf("fetch transaction: invalid id %q", id)
	}
	b, status, err := c.do(ctx, http.MethodGet, "/tx/"+id, nil, "", c.opt.MaxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	if status == http.StatusAccepted {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, ErrTxPending)
	}
	var tx types.Transaction
	if err := json.Unmarshal(b, &tx); err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w: %v", id, ErrTxSignature, err)
	}
	if tx.ID != id {
		return nil, fmt.Errorf("fetch transaction %s: %w: the gateway answered for %q", id, ErrTxSignature, tx.ID)
	}
	if tx.Format != 2 {
		return nil, fmt.Errorf("fetch transaction %s: %w: format %d", id, ErrTxSignature, tx.Format)
	}
	// The data is signed through the data root; the transaction's own data
	// field may be left out by the gateway, so the signature is checked
	// without it.
	tx.Data = ""
	if err := utils.VerifyTransaction(tx); err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w: signature: %v", id, ErrTxSignature, err)
	}
	owner, err := AddressOf(tx.Owner)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	tags, err := utils.TagsDecode(tx.Tags)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w: tags: %v", id, ErrTxSignature, err)
	}
	size, err := strconv.ParseInt(tx.DataSize, 10, 64)
	if err != nil || size <= 0 || size > limit {
		return nil, fmt.Errorf("fetch transaction %s: %w: data size %q", id, ErrTxSignature, tx.DataSize)
	}
	data, err := c.FetchDataLimit(ctx, id, size)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	root, err := utils.Base64Decode(tx.DataRoot)
	if err != nil || int64(len(data)) != size || !bytes.Equal(arweaveChunks(data).DataRoot, root) {
		return nil, fmt.Errorf("fetch transaction %s: %w: the data does not match the signed data root", id, ErrTxSignature)
	}
	vt := &VerifiedTx{ID: id, Owner: owner, Tags: tags, Data: data}
	st, err := c.Status(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("fetch transaction %s: %w", id, err)
	}
	vt.Pending = st.State != StateConfirmed
	vt.Height = st.Height
	return vt, nil
}
