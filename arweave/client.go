package arweave

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/everFinance/goar"
	"github.com/everFinance/goar/types"
	"github.com/everFinance/goar/utils"
	"github.com/inconshreveable/log15"
)

func init() { SilenceGoar() }

// SilenceGoar discards everything goar logs through log15 (its package
// logger is a child of log15's root logger, so this silences it; it also
// silences any other log15 user in the process). It runs at package
// initialisation; calling it again is harmless.
func SilenceGoar() { log15.Root().SetHandler(log15.DiscardHandler()) }

// Options configures a Client. The zero value selects the defaults.
type Options struct {
	// RequestTimeout bounds each HTTP attempt (default 30s). The caller's
	// context bounds the whole call, retries included.
	RequestTimeout time.Duration
	// MaxAttempts is the number of tries for a retryable failure: timeout,
	// connection refused/reset, 5xx or 429 (default 6). 4xx is never retried.
	MaxAttempts int
	// BackoffBase and BackoffMax shape the exponential backoff between
	// attempts (defaults 200ms and 5s; jittered).
	BackoffBase, BackoffMax time.Duration
	// MaxInlineBytes: data up to this size is posted inside the transaction
	// JSON; larger data is posted as chunks to /chunk (default 4 MiB).
	MaxInlineBytes int
	// HTTPClient overrides the HTTP client (its Timeout should be 0).
	HTTPClient *http.Client
	// CallTimeout bounds one call with all its attempts and backoff
	// (default 60s: two full attempts), so a gateway that hangs or drips on
	// every attempt fails in bounded time even under a caller context
	// without deadline.
	CallTimeout time.Duration
	// MaxResponseBytes bounds the body of an API answer (GraphQL, status,
	// info, price, anchor; default 16 MiB). A larger answer fails with
	// ErrTooLarge and is not retried.
	MaxResponseBytes int64
	// MaxDataBytes bounds FetchData (default 256 MiB); FetchDataLimit takes
	// an explicit bound. Bodies are read through a limit, never whole.
	MaxDataBytes int64
	// MaxPages bounds the GraphQL pages one FindTxs call follows (default
	// 1000, i.e. 100,000 transactions) when TxQuery.MaxPages is 0.
	MaxPages int
}

func (o Options) withDefaults() Options {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 6
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 200 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 5 * time.Second
	}
	if o.MaxInlineBytes <= 0 {
		o.MaxInlineBytes = 4 << 20
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 60 * time.Second
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 16 << 20
	}
	if o.MaxDataBytes <= 0 {
		o.MaxDataBytes = 256 << 20
	}
	if o.MaxPages <= 0 {
		o.MaxPages = 1000
	}
	return o
}

var (
	// ErrNotFound is returned when the gateway answers 404 for a transaction
	// or data, or GraphQL knows no such transaction.
	ErrNotFound = errors.New("arweave: not found")
	// ErrTimeout is returned (wrapped) when the gateway did not answer within
	// RequestTimeout on the last attempt.
	ErrTimeout = errors.New("arweave: gateway timed out")
	// ErrUnavailable is returned (wrapped) when retries were exhausted on
	// connection errors, 5xx or 429.
	ErrUnavailable = errors.New("arweave: gateway unavailable")
	// ErrRejected is returned (wrapped) when the gateway refused a request
	// with a 4xx status other than 404.
	ErrRejected = errors.New("arweave: gateway rejected request")
	// ErrNoWallet is returned when an operation needs a wallet and the client
	// has none.
	ErrNoWallet = errors.New("arweave: client has no wallet")
	// ErrGraphQL is returned when the GraphQL endpoint answers with errors.
	ErrGraphQL = errors.New("arweave: graphql error")
	// ErrTooLarge is returned (wrapped) when an answer's body exceeds its
	// bound: Options.MaxResponseBytes, the fetch limit, or the data size the
	// transaction declares. It is not retried.
	ErrTooLarge = errors.New("arweave: gateway answer too large")
	// ErrPagination is returned (with ErrGraphQL) when GraphQL paging does
	// not end: a cursor repeats, a page brings no new transaction, or the
	// page budget is spent.
	ErrPagination = errors.New("arweave: graphql pagination does not end")
)

// GatewayError describes a failed gateway call. It unwraps to ErrNotFound,
// ErrTimeout, ErrUnavailable or ErrRejected, and to the transport error.
type GatewayError struct {
	Method, URL string
	Status      int    // last HTTP status, 0 when there was no response
	Body        string // start of the last response body
	Attempts    int
	Kind        error // ErrNotFound, ErrTimeout, ErrUnavailable, ErrRejected or ErrTooLarge
	Err         error // last transport error, if any
	// Also names the other gateways asked and how each failed, when there
	// are several (URL: kind).
	Also []string
}

func (e *GatewayError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %v", e.Method, e.URL, e.Kind)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.Status)
		if e.Body != "" {
			fmt.Fprintf(&b, ": %q", e.Body)
		}
		b.WriteString(")")
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if len(e.Also) > 0 {
		fmt.Fprintf(&b, "; other gateways: %s", strings.Join(e.Also, "; "))
	}
	return b.String()
}

func (e *GatewayError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// Client talks to Arweave through one gateway (arweave.net, a node, or
// arlocal) or several (see ParseEndpoints), with an optional separate
// GraphQL endpoint. It is safe for concurrent use.
type Client struct {
	base   string // first gateway URL without trailing slash
	ep     Endpoints
	wallet *Wallet
	opt    Options
	hc     *http.Client

	mu       sync.Mutex
	answered map[string]bool // endpoints that answered a call with 2xx
}

// NewClient returns a client for gateway: one http(s) URL, or an
// endpoint list as ParseEndpoints reads it. w may be nil for read-only use.
func NewClient(gateway string, w *Wallet, opt Options) (*Client, error) {
	ep, err := ParseEndpoints(gateway)
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	return NewClientEndpoints(ep, w, opt), nil
}

// NewClientEndpoints returns a client for checked endpoints (ParseEndpoints).
func NewClientEndpoints(ep Endpoints, w *Wallet, opt Options) *Client {
	opt = opt.withDefaults()
	return &Client{base: ep.Gateways[0], ep: ep, wallet: w, opt: opt, hc: opt.HTTPClient, answered: map[string]bool{}}
}

// Endpoints returns the client's gateways and GraphQL endpoint.
func (c *Client) Endpoints() Endpoints { return c.ep }

// urlsFor lists the URLs a call to path goes to, in the order asked.
func (c *Client) urlsFor(path string) []string {
	var out []string
	if path == "/graphql" && c.ep.GraphQL != "" {
		out = append(out, c.ep.GraphQL)
	}
	for _, g := range c.ep.Gateways {
		out = append(out, g+path)
	}
	return out
}

func (c *Client) noteAnswered(u, path string) {
	c.mu.Lock()
	c.answered[strings.TrimSuffix(u, path)] = true
	if path == "/graphql" {
		c.answered[u] = true
	}
	c.mu.Unlock()
}

// Answered lists the endpoints (gateway base URLs, and the GraphQL URL)
// that answered at least one call of this client, in configured order: with
// several gateways it says which ones a command actually read from.
func (c *Client) Answered() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	if c.ep.GraphQL != "" && c.answered[c.ep.GraphQL] {
		out = append(out, c.ep.GraphQL)
	}
	for _, g := range c.ep.Gateways {
		if c.answered[g] {
			out = append(out, g)
		}
	}
	return out
}

// Gateway returns the gateway URL.
func (c *Client) Gateway() string { return c.base }

// Wallet returns the client's wallet (nil if read-only).
func (c *Client) Wallet() *Wallet { return c.wallet }

// Address returns the address of the client's wallet, "" if read-only.
func (c *Client) Address() string {
	if c.wallet == nil {
		return ""
	}
	return c.wallet.Address()
}

// retryable reports whether a transport error is worth another attempt.
func retryable(err error) bool {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.EPIPE):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

func (c *Client) backoff(ctx context.Context, attempt int) error {
	d := c.opt.BackoffBase << min(attempt, 20)
	if d <= 0 || d > c.opt.BackoffMax {
		d = c.opt.BackoffMax
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// do performs one gateway call with retries, bounded in time by
// CallTimeout and in size by limit (a 2xx body longer than limit fails with
// ErrTooLarge). It returns the body of a 2xx answer (and its status); any
// other outcome is a *GatewayError or the caller's context error.
//
// With several gateways (see ParseEndpoints) each attempt asks them in
// order and the first 2xx answer wins: a gateway that fails (connection
// error, timeout, 5xx, 429) or answers 404 or another 4xx is passed over
// for the next one, and only when every gateway failed in a retryable way
// is there a backoff and another round. GraphQL queries go to the GraphQL
// endpoints instead (Endpoints.GraphQL first, then each gateway's /graphql).
func (c *Client) do(ctx context.Context, method, path string, body []byte, ctype string, limit int64) ([]byte, int, error) {
	urls := c.urlsFor(path)
	ges := make([]*GatewayError, len(urls))
	final := make([]bool, len(urls)) // the gateway gave a definitive answer
	for i, u := range urls {
		ges[i] = &GatewayError{Method: method, URL: u}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.opt.CallTimeout)
	defer cancel()
	budgetSpent := func(ge *GatewayError) error {
		ge.Kind = ErrTimeout
		ge.Err = fmt.Errorf("no complete answer within the call budget of %s (last: %v)", c.opt.CallTimeout, ge.Err)
		return c.pick(ges, ge)
	}
	for attempt := 0; attempt < c.opt.MaxAttempts; attempt++ {
		if attempt > 0 {
			if err := c.backoff(ctx, attempt-1); err != nil {
				if parent.Err() == nil {
					return nil, 0, budgetSpent(ges[0])
				}
				return nil, 0, fmt.Errorf("%s %s: %w (last: %v)", method, urls[0], err, c.pick(ges, nil))
			}
		}
		retry := false
		for i, u := range urls {
			if final[i] {
				continue
			}
			ge := ges[i]
			ge.Attempts++
			resp, status, err := c.once(ctx, method, u, body, ctype, limit)
			if parent.Err() != nil {
				return nil, 0, fmt.Errorf("%s %s: %w", method, u, parent.Err())
			}
			if ctx.Err() != nil {
				if err != nil {
					ge.Err = err
				}
				return nil, 0, budgetSpent(ge)
			}
			if err != nil {
				ge.Status, ge.Body, ge.Err = 0, "", err
				switch {
				case errors.Is(err, ErrTooLarge):
					ge.Status, ge.Kind = status, ErrTooLarge
					final[i] = true
					continue
				case errors.Is(err, context.DeadlineExceeded):
					ge.Kind = ErrTimeout
					ge.Err = fmt.Errorf("no answer within %s", c.opt.RequestTimeout)
				default:
					ge.Kind = ErrUnavailable
				}
				if retryable(err) {
					retry = true
				} else {
					final[i] = true
				}
				continue
			}
			ge.Status, ge.Err = status, nil
			ge.Body = string(resp[:min(len(resp), 200)])
			switch {
			case status >= 200 && status < 300:
				c.noteAnswered(u, path)
				return resp, status, nil
			case status == http.StatusNotFound:
				ge.Kind = ErrNotFound
				final[i] = true
			case status >= 500 || status == http.StatusTooManyRequests:
				ge.Kind = ErrUnavailable
				retry = true
			default:
				ge.Kind = ErrRejected
				final[i] = true
			}
		}
		if !retry {
			break
		}
	}
	err := c.pick(ges, nil)
	return nil, err.Status, err
}

// pick chooses the error a failed call returns: prefer (when given) the
// failure that ended the call, else the first gateway's unless it only
// said "not found" and another failed otherwise (a gateway that lags must
// not turn another's outage into "not found"). The other gateways' outcomes
// are named in Also.
func (c *Client) pick(ges []*GatewayError, prefer *GatewayError) *GatewayError {
	chosen := prefer
	if chosen == nil {
		chosen = ges[0]
		for _, ge := range ges {
			if ge.Kind != ErrNotFound && ge.Kind != nil {
				chosen = ge
				break
			}
		}
	}
	chosen.Also = nil
	for _, ge := range ges {
		if ge != chosen && ge.Kind != nil {
			chosen.Also = append(chosen.Also, fmt.Sprintf("%s: %v", ge.URL, ge.Kind))
		}
	}
	return chosen
}

// errBodyLimit is the read bound of a non-2xx body: only its start is
// reported.
const errBodyLimit = 4 << 10

func (c *Client) once(ctx context.Context, method, u string, body []byte, ctype string, limit int64) ([]byte, int, error) {
	actx, cancel := context.WithTimeout(ctx, c.opt.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, u, rd)
	if err != nil {
		return nil, 0, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		b, err := io.ReadAll(io.LimitReader(resp.Body, errBodyLimit))
		if err != nil {
			return nil, 0, err
		}
		return b, resp.StatusCode, nil
	}
	b, err := readBounded(resp.Body, resp.ContentLength, limit)
	if err != nil {
		return nil, resp.StatusCode, err
	}
	return b, resp.StatusCode, nil
}

// readBounded reads a body of declared length n (-1 when unknown) without
// ever holding more than limit+1 bytes: a declared length over limit fails
// before reading, an undeclared one is streamed through a limit.
func readBounded(r io.Reader, n, limit int64) ([]byte, error) {
	if n > limit {
		return nil, fmt.Errorf("%w: declared %d bytes, bound %d", ErrTooLarge, n, limit)
	}
	var buf bytes.Buffer
	if n >= 0 {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	if n >= 0 && int64(buf.Len()) != n {
		return nil, io.ErrUnexpectedEOF
	}
	return buf.Bytes(), nil
}

// Info is the part of GET /info this package uses.
type Info struct {
	Network string `json:"network"`
	Height  int64  `json:"height"`
}

// Info returns the gateway's network info.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	b, _, err := c.do(ctx, http.MethodGet, "/info", nil, "", c.opt.MaxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("get info: %w", err)
	}
	var in Info
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("get info: %w", err)
	}
	return &in, nil
}

// SignedTx is a signed L1 transaction ready to post. Its ID is final:
// callers may record it before posting.
type SignedTx struct {
	ID   string
	Size int // data bytes
	tx   *types.Transaction
	data []byte
}

// SignTx builds and signs a format-2 data transaction for data with tags.
// It asks the gateway for an anchor and the price.
func (c *Client) SignTx(ctx context.Context, data []byte, tags []Tag) (*SignedTx, error) {
	anchor, err := c.Anchor(ctx)
	if err != nil {
		return nil, err
	}
	return c.signTx(ctx, data, tags, anchor)
}

// Anchor returns the gateway's current transaction anchor (last_tx).
func (c *Client) Anchor(ctx context.Context) (string, error) {
	anchor, _, err := c.do(ctx, http.MethodGet, "/tx_anchor", nil, "", c.opt.MaxResponseBytes)
	if err != nil {
		return "", fmt.Errorf("get tx anchor: %w", err)
	}
	return strings.TrimSpace(string(anchor)), nil
}

func (c *Client) signTx(ctx context.Context, data []byte, tags []Tag, anchor string) (*SignedTx, error) {
	if c.wallet == nil {
		return nil, ErrNoWallet
	}
	if n := TagBytes(tags); n > MaxTagBytes {
		return nil, fmt.Errorf("sign tx: %w: %d tag bytes > %d", ErrTags, n, MaxTagBytes)
	}
	reward, err := c.Price(ctx, len(data))
	if err != nil {
		return nil, err
	}
	tx := &types.Transaction{
		Format:   2,
		LastTx:   anchor,
		Owner:    c.wallet.Owner(),
		Tags:     utils.TagsEncode(tags),
		Quantity: "0",
		Data:     utils.Base64Encode(data),
		DataSize: strconv.Itoa(len(data)),
		Reward:   strconv.FormatInt(reward, 10),
	}
	if len(data) > 0 {
		// Our chunker, not goar's (see chunks.go); PrepareChunks keeps it.
		tx.Chunks = arweaveChunks(data)
		tx.DataRoot = utils.Base64Encode(tx.Chunks.DataRoot)
	}
	if err := utils.SignTransaction(tx, c.wallet.signer.PrvKey); err != nil {
		return nil, fmt.Errorf("sign tx: %w", err)
	}
	return &SignedTx{ID: tx.ID, Size: len(data), tx: tx, data: data}, nil
}

// Price returns the gateway's fee in winston for an L1 transaction of n
// data bytes (GET /price/{n}).
func (c *Client) Price(ctx context.Context, n int) (int64, error) {
	price, _, err := c.do(ctx, http.MethodGet, "/price/"+strconv.Itoa(n), nil, "", c.opt.MaxResponseBytes)
	if err != nil {
		return 0, fmt.Errorf("get price: %w", err)
	}
	reward, err := strconv.ParseInt(strings.TrimSpace(string(price)), 10, 64)
	if err != nil || reward < 0 {
		return 0, fmt.Errorf("get price: unexpected answer %.40q", price)
	}
	return reward, nil
}

// Balance returns the balance in winston of address (GET
// /wallet/{address}/balance).
func (c *Client) Balance(ctx context.Context, address string) (int64, error) {
	if len(address) != 43 {
		return 0, fmt.Errorf("get balance: invalid address %q", address)
	}
	b, _, err := c.do(ctx, http.MethodGet, "/wallet/"+address+"/balance", nil, "", c.opt.MaxResponseBytes)
	if err != nil {
		return 0, fmt.Errorf("get balance of %s: %w", address, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("get balance of %s: unexpected answer %.40q", address, b)
	}
	return n, nil
}

// WinstonPerAR is the number of winston in one AR.
const WinstonPerAR = 1_000_000_000_000

// FormatAR writes winston as AR with 12 decimals, trailing zeros dropped.
func FormatAR(winston int64) string {
	s := fmt.Sprintf("%d.%012d", winston/WinstonPerAR, winston%WinstonPerAR)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// PostTx posts a signed transaction (data inline up to MaxInlineBytes, else
// as chunks). It returns nil only when the gateway accepted it. If a post
// fails ambiguously (timeout, lost answer, or an error on a re-post), the
// gateway is asked whether it knows the id before an error is returned.
func (c *Client) PostTx(ctx context.Context, s *SignedTx) error {
	inline := s.Size <= c.opt.MaxInlineBytes
	txj := *s.tx
	if !inline {
		txj.Data = ""
	}
	body, err := json.Marshal(&txj)
	if err != nil {
		return fmt.Errorf("post tx %s: %w", s.ID, err)
	}
	if _, _, err := c.do(ctx, http.MethodPost, "/tx", body, "application/json", c.opt.MaxResponseBytes); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("post tx %s: %w", s.ID, err)
		}
		if st, serr := c.Status(ctx, s.ID); serr == nil && st.State != StateNotFound {
			// Accepted by an earlier attempt whose answer was lost.
		} else {
			return fmt.Errorf("post tx %s: %w", s.ID, err)
		}
	}
	if inline || s.tx.Chunks == nil {
		return nil
	}
	for i := range s.tx.Chunks.Chunks {
		ch, err := utils.GetChunk(*s.tx, i, s.data)
		if err != nil {
			return fmt.Errorf("post chunk %d of %s: %w", i, s.ID, err)
		}
		cb, err := ch.Marshal()
		if err != nil {
			return fmt.Errorf("post chunk %d of %s: %w", i, s.ID, err)
		}
		if _, _, err := c.do(ctx, http.MethodPost, "/chunk", cb, "application/json", c.opt.MaxResponseBytes); err != nil {
			return fmt.Errorf("post chunk %d of %s: %w", i, s.ID, err)
		}
	}
	return nil
}

// Upload signs and posts data as an L1 transaction and returns its id.
func (c *Client) Upload(ctx context.Context, data []byte, tags []Tag) (string, error) {
	s, err := c.SignTx(ctx, data, tags)
	if err != nil {
		return "", err
	}
	if err := c.PostTx(ctx, s); err != nil {
		return "", err
	}
	return s.ID, nil
}

// BundleItem is one ANS-104 data item to put in a bundle.
type BundleItem struct {
	Data []byte
	Tags []Tag
}

// SignedBundle is a signed bundle transaction and its signed items.
type SignedBundle struct {
	Tx      *SignedTx
	ItemIDs []string
}

// SignBundle signs every item with the client's wallet, packs them into an
// ANS-104 bundle and signs the L1 transaction carrying it, tagged
// Bundle-Format, Bundle-Version and then tags.
func (c *Client) SignBundle(ctx context.Context, items []BundleItem, tags []Tag) (*SignedBundle, error) {
	if c.wallet == nil {
		return nil, ErrNoWallet
	}
	if len(items) == 0 {
		return nil, errors.New("sign bundle: no items")
	}
	is, err := goar.NewItemSigner(c.wallet.signer)
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	signed := make([]types.BundleItem, len(items))
	ids := make([]string, len(items))
	for i, it := range items {
		if n := TagBytes(it.Tags); n > MaxTagBytes {
			return nil, fmt.Errorf("sign bundle item %d: %w: %d tag bytes", i, ErrTags, n)
		}
		bi, err := is.CreateAndSignItem(it.Data, "", "", it.Tags)
		if err != nil {
			return nil, fmt.Errorf("sign bundle item %d: %w", i, err)
		}
		signed[i], ids[i] = bi, bi.Id
	}
	b, err := utils.NewBundle(signed...)
	if err != nil {
		return nil, fmt.Errorf("sign bundle: %w", err)
	}
	tx, err := c.SignTx(ctx, b.BundleBinary, append([]Tag{
		{Name: "Bundle-Format", Value: "binary"},
		{Name: "Bundle-Version", Value: "2.0.0"},
	}, tags...))
	if err != nil {
		return nil, err
	}
	return &SignedBundle{Tx: tx, ItemIDs: ids}, nil
}

// UploadBundle posts items as one ANS-104 bundle and returns the bundle's
// transaction id and the item ids (in order). Items are signed by the
// client's wallet, so their owner is the wallet's address.
func (c *Client) UploadBundle(ctx context.Context, items []BundleItem, tags []Tag) (string, []string, error) {
	sb, err := c.SignBundle(ctx, items, tags)
	if err != nil {
		return "", nil, err
	}
	if err := c.PostTx(ctx, sb.Tx); err != nil {
		return "", nil, err
	}
	return sb.Tx.ID, sb.ItemIDs, nil
}

// FetchData returns the data of transaction or data item id with a plain
// GET {gateway}/{id}, bounded by Options.MaxDataBytes. (goar's
// GetTransactionData can return another upload's bytes when uploads
// overlap; this path does not.)
func (c *Client) FetchData(ctx context.Context, id string) ([]byte, error) {
	return c.FetchDataLimit(ctx, id, c.opt.MaxDataBytes)
}

// FetchDataLimit is FetchData reading at most limit bytes: a longer body
// (declared or streamed) fails with ErrTooLarge without being buffered.
// Pass the transaction's data size when known, so that a body of any other
// length is refused.
func (c *Client) FetchDataLimit(ctx context.Context, id string, limit int64) ([]byte, error) {
	if !validID(id) {
		return nil, fmt.Errorf("fetch data: invalid id %q", id)
	}
	if limit <= 0 {
		limit = c.opt.MaxDataBytes
	}
	b, _, err := c.do(ctx, http.MethodGet, "/"+id, nil, "", limit)
	if err != nil {
		return nil, fmt.Errorf("fetch data %s: %w", id, err)
	}
	return b, nil
}

// ValidID reports whether id has the form of an Arweave transaction id
// (43 characters of unpadded base64url).
func ValidID(id string) bool { return validID(id) }

func validID(id string) bool {
	if len(id) != 43 {
		return false
	}
	_, err := b64.DecodeString(id)
	return err == nil
}

// TxState is the confirmation state of a transaction.
type TxState string

// Transaction states.
const (
	StateNotFound  TxState = "not_found"
	StatePending   TxState = "pending"
	StateConfirmed TxState = "confirmed"
)

// TxStatus is a transaction's confirmation status.
type TxStatus struct {
	State         TxState
	Height        int64 // block height when confirmed
	Confirmations int64 // blocks on top of (and including) its block, when confirmed
}

// Status reports whether id is unknown, pending or confirmed. It reads
// GET /tx/{id}/status, accepting both a real node's answers (202 "Pending",
// JSON when mined) and arlocal's (200 "Pending"), and falls back to GraphQL
// for ids /tx does not serve (bundled data items on arlocal).
func (c *Client) Status(ctx context.Context, id string) (TxStatus, error) {
	if !validID(id) {
		return TxStatus{}, fmt.Errorf("tx status: invalid id %q", id)
	}
	b, status, err := c.do(ctx, http.MethodGet, "/tx/"+id+"/status", nil, "", c.opt.MaxResponseBytes)
	switch {
	case errors.Is(err, ErrNotFound):
		return c.statusGraphQL(ctx, id)
	case err != nil:
		return TxStatus{}, fmt.Errorf("tx status %s: %w", id, err)
	}
	t := strings.TrimSpace(string(b))
	if status == http.StatusAccepted || strings.EqualFold(t, "pending") {
		return TxStatus{State: StatePending}, nil
	}
	var js struct {
		BlockHeight   int64 `json:"block_height"`
		Confirmations int64 `json:"number_of_confirmations"`
	}
	if err := json.Unmarshal(b, &js); err != nil {
		return TxStatus{}, fmt.Errorf("tx status %s: unexpected answer %q", id, t[:min(len(t), 100)])
	}
	return TxStatus{State: StateConfirmed, Height: js.BlockHeight, Confirmations: js.Confirmations}, nil
}

func (c *Client) statusGraphQL(ctx context.Context, id string) (TxStatus, error) {
	var out struct {
		Transaction *struct {
			Block *struct {
				Height int64 `json:"height"`
			} `json:"block"`
		} `json:"transaction"`
	}
	q := `query($id: ID!) { transaction(id: $id) { block { height } } }`
	if err := c.GraphQL(ctx, q, map[string]any{"id": id}, &out); err != nil {
		return TxStatus{}, fmt.Errorf("tx status %s: %w", id, err)
	}
	switch {
	case out.Transaction == nil:
		return TxStatus{State: StateNotFound}, nil
	case out.Transaction.Block == nil:
		return TxStatus{State: StatePending}, nil
	}
	h := out.Transaction.Block.Height
	in, err := c.Info(ctx)
	if err != nil {
		return TxStatus{}, fmt.Errorf("tx status %s: %w", id, err)
	}
	return TxStatus{State: StateConfirmed, Height: h, Confirmations: max(in.Height-h, 0)}, nil
}

// GraphQL posts query with variables to {gateway}/graphql and decodes the
// "data" member into out.
func (c *Client) GraphQL(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	b, _, err := c.do(ctx, http.MethodPost, "/graphql", body, "application/json", c.opt.MaxResponseBytes)
	if err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	var res struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("graphql: %w: %s", ErrGraphQL, res.Errors[0].Message)
	}
	if err := json.Unmarshal(res.Data, out); err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	return nil
}

// TxInfo describes a transaction (or data item) found by GraphQL.
type TxInfo struct {
	ID        string
	Owner     string // address
	OwnerKey  string // base64url RSA modulus, as reported by the gateway
	Tags      []Tag
	Height    int64 // block height; 0 when Pending
	Pending   bool
	BundledIn string // bundle tx id when reported (arlocal always reports none)
	DataSize  int64
	// The signed fields GraphQL reports, for VerifySigned: the signature
	// (base64url), anchor (an L1 tx's last_tx), recipient, and an L1 tx's
	// fee and quantity in winston.
	Signature, Anchor, Recipient, Fee, Quantity string
}

// TxQuery filters a GraphQL transaction search. Tags are ANDed, each
// matching one value.
type TxQuery struct {
	Owners []string
	Tags   []Tag
	IDs    []string
	// MaxPages bounds the pages followed (0: Options.MaxPages). Spending it
	// fails with ErrPagination rather than returning a partial list.
	MaxPages int
}

const pageSize = 100 // GraphQL's page cap

// maxOwnerKeyLen bounds an owner key (base64url RSA modulus) kept from a
// GraphQL answer: 4096-bit keys are 683 characters.
const maxOwnerKeyLen = 1024

// maxSignedField bounds the anchor, recipient, fee and quantity kept from
// a GraphQL answer (anchors are 43 or 64 characters).
const maxSignedField = 128

const txSearchQuery = `query($owners: [String!], $ids: [ID!], $tags: [TagFilter!], $after: String) {
  transactions(owners: $owners, ids: $ids, tags: $tags, first: 100, after: $after) {
    pageInfo { hasNextPage }
    edges { cursor node {
      id
      owner { address key }
      tags { name value }
      block { height }
      bundledIn { id }
      data { size }
      signature anchor recipient
      fee { winston }
      quantity { winston }
    } }
  }
}`

// FindTxs returns every transaction matching q, following `after` cursors
// in pages of 100 until exhausted. Results are in gateway order, without
// duplicate ids; callers must not rely on that order. Paging is bounded: a
// cursor seen before, a page with nothing new, or more than the page budget
// fails with ErrPagination (a hostile or broken gateway can page forever).
func (c *Client) FindTxs(ctx context.Context, q TxQuery) ([]TxInfo, error) {
	vars := map[string]any{}
	if len(q.Owners) > 0 {
		vars["owners"] = q.Owners
	}
	if len(q.IDs) > 0 {
		vars["ids"] = q.IDs
	}
	if len(q.Tags) > 0 {
		tf := make([]map[string]any, len(q.Tags))
		for i, t := range q.Tags {
			tf[i] = map[string]any{"name": t.Name, "values": []string{t.Value}}
		}
		vars["tags"] = tf
	}
	budget := q.MaxPages
	if budget <= 0 {
		budget = c.opt.MaxPages
	}
	var all []TxInfo
	seen := map[string]bool{}
	cursors := map[string]bool{}
	keys := map[string]string{} // owner keys, shared: one wallet owns most results
	var after string
	for page := 0; ; page++ {
		if page >= budget {
			return nil, fmt.Errorf("find transactions: %w: %w: still more after %d pages (%d transactions)", ErrGraphQL, ErrPagination, budget, len(all))
		}
		if after != "" {
			vars["after"] = after
		}
		var out struct {
			Transactions struct {
				PageInfo struct {
					HasNextPage bool `json:"hasNextPage"`
				} `json:"pageInfo"`
				Edges []struct {
					Cursor string `json:"cursor"`
					Node   struct {
						ID    string `json:"id"`
						Owner struct {
							Address string `json:"address"`
							Key     string `json:"key"`
						} `json:"owner"`
						Tags  []Tag `json:"tags"`
						Block *struct {
							Height int64 `json:"height"`
						} `json:"block"`
						BundledIn *struct {
							ID string `json:"id"`
						} `json:"bundledIn"`
						Data struct {
							Size json.Number `json:"size"`
						} `json:"data"`
						Signature string `json:"signature"`
						Anchor    string `json:"anchor"`
						Recipient string `json:"recipient"`
						Fee       *struct {
							Winston string `json:"winston"`
						} `json:"fee"`
						Quantity *struct {
							Winston string `json:"winston"`
						} `json:"quantity"`
					} `json:"node"`
				} `json:"edges"`
			} `json:"transactions"`
		}
		if err := c.GraphQL(ctx, txSearchQuery, vars, &out); err != nil {
			return nil, fmt.Errorf("find transactions (page %d): %w", page+1, err)
		}
		fresh := 0
		for _, e := range out.Transactions.Edges {
			n := e.Node
			if seen[n.ID] {
				continue
			}
			// What no Arweave transaction can carry is not kept: this
			// bounds what a hostile gateway makes the list hold per entry.
			if !validID(n.ID) || len(n.Owner.Address) != 43 || len(n.Owner.Key) > maxOwnerKeyLen || TagBytes(n.Tags) > MaxTagBytes ||
				len(n.Signature) > maxOwnerKeyLen || len(n.Anchor) > maxSignedField || len(n.Recipient) > maxSignedField {
				continue
			}
			fresh++
			seen[n.ID] = true
			key, ok := keys[n.Owner.Key]
			if !ok {
				key = n.Owner.Key
				keys[key] = key
			}
			ti := TxInfo{ID: n.ID, Owner: n.Owner.Address, OwnerKey: key, Tags: n.Tags,
				Signature: n.Signature, Anchor: n.Anchor, Recipient: n.Recipient}
			if n.Fee != nil && len(n.Fee.Winston) <= maxSignedField {
				ti.Fee = n.Fee.Winston
			}
			if n.Quantity != nil && len(n.Quantity.Winston) <= maxSignedField {
				ti.Quantity = n.Quantity.Winston
			}
			if n.Block == nil {
				ti.Pending = true
			} else {
				ti.Height = n.Block.Height
			}
			if n.BundledIn != nil {
				ti.BundledIn = n.BundledIn.ID
			}
			if size, err := n.Data.Size.Int64(); err == nil {
				ti.DataSize = size // else unknown (0): reads fall back to the cap
			}
			all = append(all, ti)
		}
		edges := out.Transactions.Edges
		if !out.Transactions.PageInfo.HasNextPage || len(edges) == 0 {
			return all, nil
		}
		next := edges[len(edges)-1].Cursor
		switch {
		case next == "" || cursors[next] || next == after:
			return nil, fmt.Errorf("find transactions (page %d): %w: %w: cursor %.40q repeats", page+1, ErrGraphQL, ErrPagination, next)
		case fresh == 0:
			return nil, fmt.Errorf("find transactions (page %d): %w: %w: page brought no new transaction", page+1, ErrGraphQL, ErrPagination)
		}
		cursors[next] = true
		after = next
	}
}

// FetchPublicKey returns the RSA public key of address as published in the
// owner field of any of its transactions (GraphQL owner { key }), after
// checking SHA-256(n) == address. It returns ErrNotFound when the gateway
// knows no transaction from address.
func (c *Client) FetchPublicKey(ctx context.Context, address string) (*PublicKeyInfo, error) {
	var out struct {
		Transactions struct {
			Edges []struct {
				Node struct {
					Owner struct {
						Address string `json:"address"`
						Key     string `json:"key"`
					} `json:"owner"`
				} `json:"node"`
			} `json:"edges"`
		} `json:"transactions"`
	}
	q := `query($owners: [String!]) { transactions(owners: $owners, first: 1) { edges { node { owner { address key } } } } }`
	if err := c.GraphQL(ctx, q, map[string]any{"owners": []string{address}}, &out); err != nil {
		return nil, fmt.Errorf("fetch public key of %s: %w", address, err)
	}
	if len(out.Transactions.Edges) == 0 {
		return nil, fmt.Errorf("fetch public key of %s: %w: the gateway knows no transaction from this address", address, ErrNotFound)
	}
	key := out.Transactions.Edges[0].Node.Owner.Key
	pk, err := PublicKeyFromOwner(key, address)
	if err != nil {
		return nil, fmt.Errorf("fetch public key of %s: %w", address, err)
	}
	return &PublicKeyInfo{Address: address, Owner: key, Key: pk}, nil
}
