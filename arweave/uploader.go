package arweave

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Upload is one piece of data to post and its tags. Name says what it is
// in errors (the mirror passes "segment 1..40").
type Upload struct {
	Name string
	Tags []Tag
	Data []byte
}

// Receipt identifies an uploaded segment.
type Receipt struct {
	TxID     string // L1 tx id, or the data item id inside a bundle
	BundleID string // bundle tx id, "" for L1
	Size     int
}

// SignedUpload is a batch of segments signed and ready to post. Its
// Receipts (ids) are final before Post, so callers can record them first.
type SignedUpload struct {
	Receipts []Receipt
	txs      []*SignedTx
	items    []*DataItem // BundlerUploader
}

// Uploader turns batches of uploads (the mirror's segments) into posted
// Arweave transactions. Implementations: L1Uploader (one transaction
// per segment, the default) and BundleUploader (one ANS-104 bundle per
// batch).
type Uploader interface {
	// Sign prepares segs for posting; the receipts' ids are final.
	Sign(ctx context.Context, ups []Upload) (*SignedUpload, error)
	// Post posts a signed batch. It returns how many leading receipts the
	// gateway accepted; on a nil error that is all of them.
	Post(ctx context.Context, s *SignedUpload) (accepted int, err error)
}

// UploadAll signs and posts ups with u and returns the accepted receipts.
func UploadAll(ctx context.Context, u Uploader, ups []Upload) ([]Receipt, error) {
	s, err := u.Sign(ctx, ups)
	if err != nil {
		return nil, err
	}
	n, err := u.Post(ctx, s)
	return s.Receipts[:n], err
}

// L1Uploader posts each segment as its own L1 transaction.
type L1Uploader struct {
	C *Client
	// Concurrency is the number of transactions signed and posted at once
	// (default 4).
	Concurrency int
}

// NewL1Uploader returns the default uploader.
func NewL1Uploader(c *Client) *L1Uploader { return &L1Uploader{C: c, Concurrency: 4} }

func (u *L1Uploader) conc() int {
	if u.Concurrency <= 0 {
		return 4
	}
	return u.Concurrency
}

// parallel runs fn(0..n-1) with at most k at once and returns each error.
func parallel(n, k int, fn func(i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, k)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(i)
		}(i)
	}
	wg.Wait()
	return errs
}

// Sign implements Uploader.
func (u *L1Uploader) Sign(ctx context.Context, segs []Upload) (*SignedUpload, error) {
	anchor, err := u.C.Anchor(ctx)
	if err != nil {
		return nil, err
	}
	out := &SignedUpload{txs: make([]*SignedTx, len(segs)), Receipts: make([]Receipt, len(segs))}
	errs := parallel(len(segs), u.conc(), func(i int) error {
		s := segs[i]
		tx, err := u.C.signTx(ctx, s.Data, s.Tags, anchor)
		if err != nil {
			return fmt.Errorf("sign %s: %w", s.Name, err)
		}
		out.txs[i] = tx
		out.Receipts[i] = Receipt{TxID: tx.ID, Size: len(s.Data)}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// errSkipped marks a post not attempted because an earlier one failed.
var errSkipped = errors.New("not posted: an earlier post failed")

// Post implements Uploader. Transactions are posted concurrently; the
// count returned is the length of the accepted prefix (a later one that
// was accepted despite an earlier failure is found again by Status). Once a
// post has failed, posts after it are not started: only the prefix counts,
// and against a gateway that went down each would spend its own retries.
func (u *L1Uploader) Post(ctx context.Context, s *SignedUpload) (int, error) {
	return postPrefix(len(s.txs), u.conc(), func(i int) error { return u.C.PostTx(ctx, s.txs[i]) })
}

// postPrefix runs post(0..n-1), k at once, and returns the length of the
// prefix that succeeded and the first error.
func postPrefix(n, k int, post func(i int) error) (int, error) {
	var mu sync.Mutex
	failed := n // lowest index that failed
	errs := parallel(n, k, func(i int) error {
		mu.Lock()
		skip := i > failed
		mu.Unlock()
		if skip {
			return errSkipped
		}
		err := post(i)
		if err != nil {
			mu.Lock()
			failed = min(failed, i)
			mu.Unlock()
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return n, nil
}

// BundleUploader posts each batch as one ANS-104 bundle whose items are
// the uploads, signed by the client's wallet. Tags are the bundle
// transaction's own, after Bundle-Format and Bundle-Version.
type BundleUploader struct {
	C    *Client
	Tags []Tag
}

// NewBundleUploader returns a bundle uploader whose bundles carry tags.
func NewBundleUploader(c *Client, tags []Tag) *BundleUploader {
	return &BundleUploader{C: c, Tags: tags}
}

// Sign implements Uploader.
func (u *BundleUploader) Sign(ctx context.Context, segs []Upload) (*SignedUpload, error) {
	items := make([]BundleItem, len(segs))
	for i, s := range segs {
		items[i] = BundleItem{Data: s.Data, Tags: s.Tags}
	}
	sb, err := u.C.SignBundle(ctx, items, u.Tags)
	if err != nil {
		return nil, fmt.Errorf("sign bundle of %d items: %w", len(segs), err)
	}
	out := &SignedUpload{txs: []*SignedTx{sb.Tx}}
	for i, id := range sb.ItemIDs {
		out.Receipts = append(out.Receipts, Receipt{TxID: id, BundleID: sb.Tx.ID, Size: len(segs[i].Data)})
	}
	return out, nil
}

// Post implements Uploader: all items are accepted or none.
func (u *BundleUploader) Post(ctx context.Context, s *SignedUpload) (int, error) {
	for _, tx := range s.txs {
		if err := u.C.PostTx(ctx, tx); err != nil {
			return 0, err
		}
	}
	return len(s.Receipts), nil
}
