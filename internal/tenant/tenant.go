package tenant

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// TokenHashName is the file holding the hash of a store's bearer token.
const TokenHashName = "token.sha256"

// Defaults of Options' zero fields.
const (
	DefaultIdleTimeout = 5 * time.Minute
	DefaultRate        = 50.0
	DefaultBurst       = 100
)

var (
	// ErrBadName is returned when a store name is not ValidName.
	ErrBadName = errors.New("tenant: bad store name")
	// ErrExists is returned by Create when the store already exists.
	ErrExists = errors.New("tenant: store exists")
	// ErrNoStore is returned when no store of that name exists.
	ErrNoStore = errors.New("tenant: no such store")
	// ErrInUse is returned by Remove while a process owns the store.
	ErrInUse = errors.New("tenant: store is in use")
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidName reports whether name can name a store.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// HashToken returns the hex SHA-256 of a token, as token.sha256 holds it.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Create makes the store NAME in dir with init (which creates an ordinary
// ucl store in the directory it is given) and returns its new bearer
// token; only its hash is kept.
func Create(dir, name string, init func(storeDir string) error) (string, error) {
	if !ValidName(name) {
		return "", fmt.Errorf("create store %q: %w", name, ErrBadName)
	}
	sd := filepath.Join(dir, name)
	if _, err := os.Stat(sd); err == nil {
		return "", fmt.Errorf("create store %q: %w", name, ErrExists)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create store %q: %w", name, err)
	}
	if err := init(sd); err != nil {
		return "", fmt.Errorf("create store %q: %w", name, err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("create store %q: make token: %w", name, err)
	}
	// The name prefix lets a person tell tokens apart; the random part is
	// the secret.
	tok := name + "." + hex.EncodeToString(raw[:])
	if err := fsutil.WriteFileAtomic(filepath.Join(sd, TokenHashName), []byte(HashToken(tok)+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("create store %q: write token hash: %w", name, err)
	}
	return tok, nil
}

// Info describes one store of List.
type Info struct {
	Name    string    `json:"name"`
	Dir     string    `json:"dir"`
	Created time.Time `json:"created"`
	// Open is true while a process owns the store (its socket answers).
	Open bool `json:"open"`
}

// List returns the stores in dir, by name.
func List(dir string) ([]Info, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list stores: %w", err)
	}
	var out []Info
	for _, e := range ents {
		if !e.IsDir() || !ValidName(e.Name()) {
			continue
		}
		sd := filepath.Join(dir, e.Name())
		fi, err := os.Stat(filepath.Join(sd, TokenHashName))
		if err != nil {
			continue
		}
		out = append(out, Info{Name: e.Name(), Dir: sd, Created: fi.ModTime().UTC(), Open: owned(sd)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func owned(sd string) bool {
	cl, err := ucl.Dial(sd)
	if err != nil {
		return false
	}
	cl.Close()
	return true
}

// Remove deletes the store NAME in dir with everything in it. It refuses
// while a process owns the store (a host serving it: wait for its idle
// close, or stop it).
func Remove(dir, name string) error {
	if !ValidName(name) {
		return fmt.Errorf("remove store %q: %w", name, ErrBadName)
	}
	sd := filepath.Join(dir, name)
	if _, err := os.Stat(filepath.Join(sd, TokenHashName)); err != nil {
		return fmt.Errorf("remove store %q: %w", name, ErrNoStore)
	}
	if owned(sd) {
		return fmt.Errorf("remove store %q: %w", name, ErrInUse)
	}
	// The hash goes first: from then on no token reaches the store.
	if err := os.Remove(filepath.Join(sd, TokenHashName)); err != nil {
		return fmt.Errorf("remove store %q: %w", name, err)
	}
	if err := os.RemoveAll(sd); err != nil {
		return fmt.Errorf("remove store %q: %w", name, err)
	}
	return nil
}

// Options configure NewHost.
type Options struct {
	// Dir holds the stores.
	Dir string
	// Open opens the store name in storeDir.
	Open func(name, storeDir string) (Opened, error)
	// Handler builds a store's HTTP face (REST, proxy, MCP) for the
	// store's token.
	Handler func(api ucl.API, token string) (http.Handler, error)
	// IdleTimeout closes a store that had no request for that long.
	IdleTimeout time.Duration
	// Rate and Burst are each store's token bucket (requests a second,
	// requests in reserve).
	Rate  float64
	Burst int
	// MaxBodyBytes caps one request body (0: no cap of the host's own; the
	// store's face caps its routes).
	MaxBodyBytes int64
	// Log receives a line per store opened and closed (nil: discarded).
	Log io.Writer
	// Now is the clock (nil: time.Now); tests of the bucket set it.
	Now func() time.Time
	// Lookup, when set, is asked about a token no store in Dir has (by
	// its hash): it may provision the store into Dir (a cluster node
	// fetching its identity) and return nil, after which Dir is scanned
	// again. Lookups run one at a time.
	Lookup func(tokenHash string) error
}

// Opened is a store as Options.Open gives it.
type Opened struct {
	// API is the store's engine (or a client of its owner elsewhere).
	API ucl.API
	// Close releases it.
	Close func() error
	// Serve, when set, answers the store's owner socket until its context
	// ends (only a store this process owns has one).
	Serve func(ctx context.Context) error
	// Transient is used for one request and closed after it (a client of
	// an owner elsewhere in a cluster: the owner may change at any time).
	Transient bool
	// Valid, when set, is asked before each request: false closes the
	// store and opens it anew for the request (a cluster owner that lost
	// its lease, or whose log stopped taking appends).
	Valid func() bool
}

// Host serves the stores of a directory (package doc).
type Host struct {
	o      Options
	log    *slog.Logger
	mu     sync.Mutex
	byHash map[string]string // token hash -> store name
	stores map[string]*entry // by name
	scan   time.Time         // last rescan on an unknown token
	stop   chan struct{}
	wg     sync.WaitGroup
	closed bool
	lookMu sync.Mutex // one Lookup at a time
}

type entry struct {
	name, dir string
	// guarded by Host.mu
	tokens   float64
	refilled time.Time
	lastUse  time.Time
	inflight int
	// open state, guarded by openMu (opening may take a while; other
	// stores must not wait for it)
	openMu   sync.Mutex
	st       *Opened
	h        http.Handler
	sockStop context.CancelFunc
	sockDone chan error
}

// NewHost scans o.Dir and returns the host; Close ends it.
func NewHost(o Options) (*Host, error) {
	if o.Open == nil || o.Handler == nil {
		return nil, errors.New("tenant: NewHost needs Open and Handler")
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	lw := o.Log
	if lw == nil {
		lw = io.Discard
	}
	h := &Host{o: o, log: slog.New(slog.NewTextHandler(lw, nil)), stores: map[string]*entry{}, stop: make(chan struct{})}
	if err := h.rescan(); err != nil {
		return nil, err
	}
	h.wg.Add(1)
	go h.reaper()
	return h, nil
}

// rescan reads every token hash of Dir. Called with mu held or before
// the host is shared.
func (h *Host) rescan() error {
	infos, err := List(h.o.Dir)
	if err != nil {
		return err
	}
	by := map[string]string{}
	for _, in := range infos {
		b, err := os.ReadFile(filepath.Join(in.Dir, TokenHashName))
		if err != nil {
			continue // removed meanwhile
		}
		by[strings.TrimSpace(string(b))] = in.Name
		if h.stores[in.Name] == nil {
			h.stores[in.Name] = &entry{name: in.Name, dir: in.Dir, tokens: float64(h.o.Burst)}
		}
	}
	h.byHash = by
	return nil
}

// Stores returns how many stores the host knows and how many are open.
func (h *Host) Stores() (known, open int) {
	h.mu.Lock()
	es := make([]*entry, 0, len(h.stores))
	for _, e := range h.stores {
		es = append(es, e)
	}
	h.mu.Unlock()
	// openMu is never taken under mu (the reaper takes mu under openMu).
	for _, e := range es {
		known++
		e.openMu.Lock()
		if e.st != nil {
			open++
		}
		e.openMu.Unlock()
	}
	return known, open
}

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e apiError
	e.Error.Code, e.Error.Message = code, msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(e)
}

func bearer(r *http.Request) string {
	a := strings.TrimSpace(r.Header.Get("Authorization"))
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// ServeHTTP routes a request to its token's store.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok := bearer(r)
	e, wait, ok := h.admit(tok)
	if e == nil && tok != "" && h.o.Lookup != nil && h.lookup(tok) {
		e, wait, ok = h.admit(tok)
	}
	if e == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ucl"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token> (the token `ucl stores create NAME` printed)")
		return
	}
	if !ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(max(wait.Seconds(), 1)))))
		writeError(w, http.StatusTooManyRequests, "rate_limited", fmt.Sprintf("store %s is over its request rate; retry after %s", e.name, wait.Round(time.Millisecond)))
		return
	}
	defer h.release(e)
	hd, done, err := h.open(e, tok)
	if err != nil {
		h.log.Error("open store", "store", e.name, "err", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("store %s cannot be opened: %v", e.name, err))
		return
	}
	if h.o.MaxBodyBytes > 0 {
		r.Body = http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes)
	}
	defer done()
	hd.ServeHTTP(w, r)
}

// lookup asks Options.Lookup about tok and rescans Dir when it provided
// the store.
func (h *Host) lookup(tok string) bool {
	h.lookMu.Lock()
	defer h.lookMu.Unlock()
	if err := h.o.Lookup(HashToken(tok)); err != nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	if err := h.rescan(); err != nil {
		h.log.Error("rescan stores", "err", err)
		return false
	}
	return true
}

// admit finds the store of tok (nil: none) and takes one token of its
// bucket (ok false: none left, wait is when the next one is due).
func (h *Host) admit(tok string) (e *entry, wait time.Duration, ok bool) {
	if tok == "" {
		return nil, 0, false
	}
	hash := HashToken(tok)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, 0, false
	}
	name, found := h.byHash[hash]
	now := h.o.Now()
	// A token not seen yet may be a store created since the last scan; at
	// most one rescan a second, so wrong tokens cannot make the host list
	// the directory at will.
	if !found && now.Sub(h.scan) >= time.Second {
		h.scan = now
		if err := h.rescan(); err != nil {
			h.log.Error("rescan stores", "err", err)
		}
		name, found = h.byHash[hash]
	}
	if !found {
		return nil, 0, false
	}
	e = h.stores[name]
	if e.refilled.IsZero() {
		e.refilled = now
	}
	e.tokens = min(float64(h.o.Burst), e.tokens+now.Sub(e.refilled).Seconds()*h.o.Rate)
	e.refilled = now
	if e.tokens < 1 {
		return e, time.Duration((1 - e.tokens) / h.o.Rate * float64(time.Second)), false
	}
	e.tokens--
	e.inflight++
	e.lastUse = now
	return e, 0, true
}

func (h *Host) release(e *entry) {
	h.mu.Lock()
	e.inflight--
	e.lastUse = h.o.Now()
	h.mu.Unlock()
}

// open returns the store's handler, opening the store if it is closed,
// and what to call once the request is done. tok "" (Warm) opens the
// store only: the handler is built for the first request's token.
func (h *Host) open(e *entry, tok string) (http.Handler, func(), error) {
	e.openMu.Lock()
	defer e.openMu.Unlock()
	if e.st != nil && e.st.Valid != nil && !e.st.Valid() {
		if err := h.closeStore(e, "no longer valid"); err != nil {
			h.log.Error("close store", "store", e.name, "err", err)
		}
	}
	if e.h != nil {
		return e.h, func() {}, nil
	}
	if e.st == nil {
		st, err := h.o.Open(e.name, e.dir)
		if err != nil {
			return nil, nil, err
		}
		if st.Transient {
			if tok == "" {
				st.Close()
				return nil, func() {}, nil
			}
			hd, err := h.o.Handler(st.API, tok)
			if err != nil {
				st.Close()
				return nil, nil, err
			}
			return hd, func() { st.Close() }, nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		if st.Serve != nil {
			go func() { done <- st.Serve(ctx) }()
		} else {
			done <- nil
		}
		e.st, e.sockStop, e.sockDone = &st, cancel, done
		h.log.Info("opened store", "store", e.name)
	}
	if tok == "" {
		return nil, func() {}, nil
	}
	hd, err := h.o.Handler(e.st.API, tok)
	if err != nil {
		return nil, nil, err
	}
	e.h = hd
	return hd, func() {}, nil
}

// Rescan reads Dir's stores again now: a store provisioned into Dir
// outside a request (a cluster node fetching a store it takes over) is
// known from then on.
func (h *Host) Rescan() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.scan = h.o.Now()
	return h.rescan()
}

// Warm opens store name as a request would, without one: a cluster node
// takes over a store whose owner died before anyone asks for it. A store
// that opens only as a client of an owner elsewhere is closed again. The
// store then closes after IdleTimeout like any other.
func (h *Host) Warm(name string) error {
	h.mu.Lock()
	e := h.stores[name]
	if now := h.o.Now(); e == nil && !h.closed && now.Sub(h.scan) >= time.Second {
		h.scan = now
		if err := h.rescan(); err != nil {
			h.mu.Unlock()
			return err
		}
		e = h.stores[name]
	}
	if e == nil || h.closed {
		h.mu.Unlock()
		return fmt.Errorf("warm store %q: %w", name, ErrNoStore)
	}
	e.inflight++
	h.mu.Unlock()
	defer h.release(e)
	_, done, err := h.open(e, "")
	if err != nil {
		return fmt.Errorf("warm store %q: %w", name, err)
	}
	done()
	return nil
}

// closeStore closes an open store. Called with e.openMu held.
func (h *Host) closeStore(e *entry, why string) error {
	if e.st == nil {
		return nil
	}
	e.sockStop()
	serr := <-e.sockDone
	err := errors.Join(serr, e.st.Close())
	e.st, e.h, e.sockStop, e.sockDone = nil, nil, nil, nil
	h.log.Info("closed store", "store", e.name, "why", why)
	return err
}

func (h *Host) reaper() {
	defer h.wg.Done()
	// At most a second between looks: an idle store closes within a
	// second of its timeout whatever the timeout.
	tick := time.NewTicker(min(max(h.o.IdleTimeout/4, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		h.mu.Lock()
		now := h.o.Now()
		var idle []*entry
		for _, e := range h.stores {
			if e.inflight == 0 && !e.lastUse.IsZero() && now.Sub(e.lastUse) >= h.o.IdleTimeout {
				idle = append(idle, e)
			}
		}
		h.mu.Unlock()
		for _, e := range idle {
			e.openMu.Lock()
			// A request may have come in meanwhile: check again under
			// both locks before closing.
			h.mu.Lock()
			busy := e.inflight > 0 || now.Sub(e.lastUse) < h.o.IdleTimeout
			if !busy {
				e.lastUse = time.Time{}
			}
			h.mu.Unlock()
			if !busy {
				if err := h.closeStore(e, "idle"); err != nil {
					h.log.Error("close store", "store", e.name, "err", err)
				}
			}
			e.openMu.Unlock()
		}
	}
}

// Close closes every open store; requests after it get 401.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	es := make([]*entry, 0, len(h.stores))
	for _, e := range h.stores {
		es = append(es, e)
	}
	h.mu.Unlock()
	close(h.stop)
	h.wg.Wait()
	// Stores close side by side (at most closeWorkers at a time): each
	// close waits on its own files and, in a cluster, on its lease and
	// stream; one after another, 200 stores took about 70 s to stop.
	errs := make([]error, len(es))
	sem := make(chan struct{}, closeWorkers)
	var wg sync.WaitGroup
	for i, e := range es {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			e.openMu.Lock()
			errs[i] = h.closeStore(e, "shutdown")
			e.openMu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeWorkers bounds the stores Close closes at once.
const closeWorkers = 16
