package arweave

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"

	"github.com/everFinance/goar/types"
	"github.com/everFinance/goar/utils"
)

// VerifySigned checks that data, with the tags, owner key and signed
// fields GraphQL reported for t, carries t.Owner's own signature: either as
// an ANS-104 data item (signature type 1, RSA-PSS over the deep hash of
// "dataitem", "1", "1", owner, target, anchor, the Avro-encoded tags and the
// data) or as a format-2 L1 transaction (RSA-PSS over the deep hash of its
// fields, the data bound through the data root computed here). The id must
// be SHA-256 of the signature, and the owner key must hash to t.Owner.
//
// It needs nothing but the GraphQL answer and the data, so it checks
// bundled segments, which /tx/{id} does not serve, and L1 segments alike. A
// gateway cannot pass off data, tags or an owner the wallet did not sign:
// every one of them is under the signature. Failures wrap ErrTxSignature.
func VerifySigned(t TxInfo, data []byte) error {
	if err := VerifyOwner(t.OwnerKey, t.Owner); err != nil {
		return fmt.Errorf("verify %s: %w: %w", t.ID, ErrTxSignature, err)
	}
	sig, err := b64.DecodeString(t.Signature)
	if err != nil || len(sig) == 0 {
		return fmt.Errorf("verify %s: %w: no signature reported", t.ID, ErrTxSignature)
	}
	if id := sha256.Sum256(sig); b64.EncodeToString(id[:]) != t.ID {
		return fmt.Errorf("verify %s: %w: the id is not the hash of the signature", t.ID, ErrTxSignature)
	}
	itemErr := verifyItem(t, data)
	if itemErr == nil {
		return nil
	}
	if t.BundledIn != "" { // reported as bundled: only an item can be right
		return fmt.Errorf("verify %s: %w: data item: %v", t.ID, ErrTxSignature, itemErr)
	}
	// An L1 transaction, or an item whose bundle is not reported.
	l1Err := verifyL1(t, data)
	if l1Err == nil {
		return nil
	}
	return fmt.Errorf("verify %s: %w: neither a data item (%v) nor a transaction (%v) signed by %s", t.ID, ErrTxSignature, itemErr, l1Err, t.Owner)
}

func verifyItem(t TxInfo, data []byte) error {
	it := types.BundleItem{
		SignatureType: types.ArweaveSignType,
		Signature:     t.Signature,
		Owner:         t.OwnerKey,
		Target:        t.Recipient,
		Anchor:        t.Anchor,
		Tags:          t.Tags,
		Data:          utils.Base64Encode(data),
		Id:            t.ID,
	}
	if err := utils.VerifyBundleItem(it); err != nil {
		return errors.New("signature does not match")
	}
	return nil
}

func verifyL1(t TxInfo, data []byte) error {
	if _, err := strconv.ParseUint(t.Fee, 10, 64); err != nil {
		return fmt.Errorf("fee %q", t.Fee)
	}
	qty := t.Quantity
	if qty == "" {
		qty = "0"
	}
	ch := arweaveChunks(data)
	tx := types.Transaction{
		Format:    2,
		ID:        t.ID,
		LastTx:    t.Anchor,
		Owner:     t.OwnerKey,
		Tags:      utils.TagsEncode(t.Tags),
		Target:    t.Recipient,
		Quantity:  qty,
		Reward:    t.Fee,
		DataSize:  strconv.Itoa(len(data)),
		DataRoot:  utils.Base64Encode(ch.DataRoot),
		Signature: t.Signature,
		Chunks:    ch,
	}
	if err := utils.VerifyTransaction(tx); err != nil {
		return errors.New("signature does not match")
	}
	return nil
}
