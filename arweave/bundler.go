package arweave

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/everFinance/goar"
	"github.com/everFinance/goar/utils"
)

// ErrPaymentRequired is returned (with ErrRejected) when a bundler answers
// 402: the upload is over its free size and the account has no credits.
var ErrPaymentRequired = errors.New("arweave: the bundler wants payment for this upload (402)")

// ErrBundlerAnswer is returned when a bundler accepted an upload but its
// answer names another id than the data item's, or does not parse.
var ErrBundlerAnswer = errors.New("arweave: unexpected bundler answer")

// TurboUploadURL is ArDrive Turbo's public upload service, the documented
// example of a bundler (other bundlers speak the same API).
const TurboUploadURL = "https://upload.ardrive.io"

// FreeItemBytes is the size under which Turbo uploads a data item for free
// (100 KiB of data; the item's header and tags come on top).
const FreeItemBytes = 100 << 10

// Bundler talks to a bundling service with the Turbo upload API:
//
//	POST {url}/v1/tx             Content-Type: application/octet-stream,
//	                             body: one signed ANS-104 data item;
//	                             200/201 {"id": …} once accepted
//	GET  {url}/v1/tx/{id}/status {"status": "NEW"|"PENDING"|"CONFIRMED"|
//	                             "FINALIZED"|"FAILED", "bundleId": …}
//
// The bundler pays the Arweave fee and posts the item inside a bundle
// transaction of its own; the item keeps the wallet's signature, so readers
// verify it exactly like an item ucl bundled itself. Calls are bounded and
// retried like gateway calls (Options); 402 is ErrPaymentRequired and 413
// ErrRejected, neither retried.
type Bundler struct {
	c *Client // the bundler's URL as its only "gateway"
}

// NewBundler returns a client of the bundler at url.
func NewBundler(url string, opt Options) (*Bundler, error) {
	u, err := CheckURL(url)
	if err != nil {
		return nil, fmt.Errorf("new bundler: %w", err)
	}
	return &Bundler{c: NewClientEndpoints(Endpoints{Gateways: []string{u}}, nil, opt)}, nil
}

// URL returns the bundler's URL.
func (b *Bundler) URL() string { return b.c.base }

// DataItem is a signed ANS-104 data item ready to post: its id is final.
type DataItem struct {
	ID     string
	Binary []byte
	Size   int // data bytes
}

// SignDataItem signs data with tags as one ANS-104 data item (signature
// type 1, Arweave RSA-PSS, no target, no anchor) with the client's wallet.
func (c *Client) SignDataItem(data []byte, tags []Tag) (*DataItem, error) {
	if c.wallet == nil {
		return nil, ErrNoWallet
	}
	if n := TagBytes(tags); n > MaxTagBytes {
		return nil, fmt.Errorf("sign data item: %w: %d tag bytes > %d", ErrTags, n, MaxTagBytes)
	}
	is, err := goar.NewItemSigner(c.wallet.signer)
	if err != nil {
		return nil, fmt.Errorf("sign data item: %w", err)
	}
	it, err := is.CreateAndSignItem(data, "", "", tags)
	if err != nil {
		return nil, fmt.Errorf("sign data item: %w", err)
	}
	return &DataItem{ID: it.Id, Binary: it.ItemBinary, Size: len(data)}, nil
}

// Post uploads a signed data item. It returns nil only when the bundler
// accepted it under its id. An answer lost after the bundler accepted the
// item is caught by asking its status before failing, so a retry does not
// count as a second upload.
func (b *Bundler) Post(ctx context.Context, it *DataItem) error {
	body, _, err := b.c.do(ctx, http.MethodPost, "/v1/tx", it.Binary, "application/octet-stream", b.c.opt.MaxResponseBytes)
	if err != nil {
		var ge *GatewayError
		if errors.As(err, &ge) && ge.Status == http.StatusPaymentRequired {
			return fmt.Errorf("post data item %s (%d bytes) to %s: %w: %w", it.ID, it.Size, b.URL(), ErrPaymentRequired, err)
		}
		if ctx.Err() == nil && !errors.Is(err, ErrRejected) {
			if st, serr := b.Status(ctx, it.ID); serr == nil && st.Known() {
				return nil // accepted by an attempt whose answer was lost
			}
		}
		return fmt.Errorf("post data item %s (%d bytes) to %s: %w", it.ID, it.Size, b.URL(), err)
	}
	var ans struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("post data item %s to %s: %w: %v", it.ID, b.URL(), ErrBundlerAnswer, err)
	}
	if ans.ID != it.ID {
		return fmt.Errorf("post data item %s to %s: %w: it answered for id %q", it.ID, b.URL(), ErrBundlerAnswer, ans.ID)
	}
	return nil
}

// BundlerStatus is what a bundler says of a data item.
type BundlerStatus struct {
	// Status is the bundler's word, upper case: NEW, PENDING, CONFIRMED,
	// FINALIZED, FAILED, or NOT_FOUND when it does not know the id.
	Status   string `json:"status"`
	BundleID string `json:"bundleId,omitempty"`
}

// Known reports whether the bundler holds the item (in any state but
// failed).
func (s BundlerStatus) Known() bool { return s.Status != "NOT_FOUND" && s.Status != "FAILED" }

// Status asks the bundler about data item id.
func (b *Bundler) Status(ctx context.Context, id string) (BundlerStatus, error) {
	if !validID(id) {
		return BundlerStatus{}, fmt.Errorf("bundler status: invalid id %q", id)
	}
	body, _, err := b.c.do(ctx, http.MethodGet, "/v1/tx/"+id+"/status", nil, "", b.c.opt.MaxResponseBytes)
	if errors.Is(err, ErrNotFound) {
		return BundlerStatus{Status: "NOT_FOUND"}, nil
	}
	if err != nil {
		return BundlerStatus{}, fmt.Errorf("bundler status of %s: %w", id, err)
	}
	st, err := parseBundlerStatus(body)
	if err != nil {
		return BundlerStatus{}, fmt.Errorf("bundler status of %s: %w", id, err)
	}
	return st, nil
}

// maxStatusWord bounds the status word kept from a bundler's answer.
const maxStatusWord = 32

// parseBundlerStatus reads a bundler's status answer: a JSON object with a
// non-empty "status" word (kept upper case) and an optional "bundleId"
// that must be a transaction id.
func parseBundlerStatus(body []byte) (BundlerStatus, error) {
	var st BundlerStatus
	if err := json.Unmarshal(body, &st); err != nil || st.Status == "" || len(st.Status) > maxStatusWord {
		return BundlerStatus{}, fmt.Errorf("%w: status %.100q", ErrBundlerAnswer, body)
	}
	st.Status = strings.ToUpper(st.Status)
	if st.BundleID != "" && !validID(st.BundleID) {
		return BundlerStatus{}, fmt.Errorf("%w: bundle id %.60q", ErrBundlerAnswer, st.BundleID)
	}
	return st, nil
}

// BundlerGateway is a Client whose uploads go through a bundler: Upload
// (checkpoints, disclosures) posts one data item, and Status follows the
// bundler and then the gateway. Reads are the Client's.
type BundlerGateway struct {
	*Client
	B *Bundler
}

// Upload signs data with tags as a data item, posts it to the bundler and
// returns its id.
func (g *BundlerGateway) Upload(ctx context.Context, data []byte, tags []Tag) (string, error) {
	it, err := g.SignDataItem(data, tags)
	if err != nil {
		return "", err
	}
	if err := g.B.Post(ctx, it); err != nil {
		return "", err
	}
	return it.ID, nil
}

// Status reports a data item's state: confirmed only once the gateway
// shows it mined (its bundle is in a block); pending while the gateway
// shows it unmined or the bundler holds it; not found when neither knows
// it, or the bundler says it failed and the gateway does not have it.
func (g *BundlerGateway) Status(ctx context.Context, id string) (TxStatus, error) {
	st, err := g.Client.Status(ctx, id)
	if err != nil || st.State != StateNotFound {
		return st, err
	}
	bs, err := g.B.Status(ctx, id)
	if err != nil {
		return TxStatus{}, err
	}
	if bs.Known() {
		return TxStatus{State: StatePending}, nil
	}
	return TxStatus{State: StateNotFound}, nil
}

// BundlerUploader posts each upload as its own data item through a
// bundler (no AR needed: the bundler pays). Receipts carry the item ids.
type BundlerUploader struct {
	C *Client // signs (its wallet)
	B *Bundler
	// Concurrency is the number of items posted at once (default 4).
	Concurrency int
}

// Sign implements Uploader.
func (u *BundlerUploader) Sign(ctx context.Context, ups []Upload) (*SignedUpload, error) {
	out := &SignedUpload{items: make([]*DataItem, len(ups)), Receipts: make([]Receipt, len(ups))}
	for i, up := range ups {
		it, err := u.C.SignDataItem(up.Data, up.Tags)
		if err != nil {
			return nil, fmt.Errorf("sign %s: %w", up.Name, err)
		}
		out.items[i] = it
		out.Receipts[i] = Receipt{TxID: it.ID, Size: len(up.Data)}
	}
	return out, nil
}

// Post implements Uploader: items are posted concurrently; the count is
// the accepted prefix, and no item after a failed one is started.
func (u *BundlerUploader) Post(ctx context.Context, s *SignedUpload) (int, error) {
	k := u.Concurrency
	if k <= 0 {
		k = 4
	}
	return postPrefix(len(s.items), k, func(i int) error { return u.B.Post(ctx, s.items[i]) })
}

// dataItemFixed is an ANS-104 data item's size beside its tags and data
// with an Arweave signature and neither target nor anchor: signature type
// (2), signature (512), owner (512), target and anchor flags (2), tag count
// and tag bytes length (16).
const dataItemFixed = 2 + 512 + 512 + 2 + 16

// DataItemSize is the size of the data item SignDataItem makes of n data
// bytes with tags (what a bundler measures against its free size).
func DataItemSize(n int, tags []Tag) (int, error) {
	tb, err := utils.SerializeTags(tags)
	if err != nil {
		return 0, fmt.Errorf("data item size: %w: %v", ErrTags, err)
	}
	return dataItemFixed + len(tb) + n, nil
}
