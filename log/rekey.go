package log

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/unlimitedcontext/ucl/crypto"
)

// ErrShredded is returned when an event's data key was wrapped under a
// vault-key epoch that a later key rotation wiped, and no rekey event
// rewrapped it under an epoch still held: the rotation left it out because
// its content was tombstoned. The content is gone by design; this is not
// corruption.
var ErrShredded = errors.New("log: content shredded by a vault-key rotation")

// Shredded is the body Events hands out for an event whose content a key
// rotation shredded (ErrShredded): only its plaintext header is known.
type Shredded struct {
	Of Type // the event's type, from its header
}

// MarshalJSON renders the body's place in a replay line.
func (s *Shredded) MarshalJSON() ([]byte, error) {
	return []byte(`{"shredded":true}`), nil
}

// Type returns the type named in the event's header.
func (s *Shredded) Type() Type { return s.Of }

func (s *Shredded) appendTo([]byte, *Header) ([]byte, error) {
	return nil, fmt.Errorf("encode body: %w", ErrShredded)
}

// IsShredded reports whether ev's content was shredded.
func (e *Event) IsShredded() bool { _, ok := e.Body.(*Shredded); return ok }

// Rekeys maps an event seq to its newest rewrapped data key, from the rekey
// events of a log. A rotation to epoch e+1 writes rekey events carrying
// every live event's DEK wrapped under e+1; the DEK of event s is then the
// one wrapped under the newest epoch the keyring holds: in s's own header
// when that epoch is held, else in the newest rekey event naming s.
type Rekeys struct {
	m      map[uint64]rekeyed
	newest uint32 // the highest epoch a rekey event names (0: no rotation)
}

type rekeyed struct {
	epoch   uint32
	wrapped [WrappedKeySize]byte
}

// NewRekeys returns an empty map.
func NewRekeys() *Rekeys { return &Rekeys{m: map[uint64]rekeyed{}} }

// Add records a rekey body; for a seq named twice the newer epoch wins.
func (r *Rekeys) Add(k *Rekey) {
	r.newest = max(r.newest, k.Epoch)
	for _, w := range k.Keys {
		if cur, ok := r.m[w.Seq]; !ok || k.Epoch >= cur.epoch {
			r.m[w.Seq] = rekeyed{k.Epoch, w.Wrapped}
		}
	}
}

// Covered reports whether seq has a DEK rewrapped under epoch.
func (r *Rekeys) Covered(seq uint64, epoch uint32) bool {
	if r == nil {
		return false
	}
	k, ok := r.m[seq]
	return ok && k.epoch == epoch
}

// Newest is the highest epoch a rekey event names (0: none).
func (r *Rekeys) Newest() uint32 {
	if r == nil {
		return 0
	}
	return r.newest
}

// keyFor returns the epoch and wrapped DEK that open event h under kr.
// rekeys is called only when h's own epoch is not held. The key from a
// format-2 or -3 header is a batch key (dataKey derives the DEK from it); a
// rekey event always carries the event's DEK itself.
func keyFor(kr *crypto.Keyring, h *Header, rekeys func() (*Rekeys, error)) (uint32, [WrappedKeySize]byte, error) {
	if kr.Has(h.KeyEpoch) || rekeys == nil {
		return h.KeyEpoch, h.WrappedDEK, nil
	}
	rk, err := rekeys()
	if err != nil {
		return 0, h.WrappedDEK, err
	}
	if k, ok := rk.m[h.Seq]; ok && kr.Has(k.epoch) {
		return k.epoch, k.wrapped, errRekeyed
	}
	if rk.Newest() > h.KeyEpoch && kr.Has(rk.Newest()) {
		return 0, h.WrappedDEK, fmt.Errorf("decrypt seq %d (epoch %d): %w", h.Seq, h.KeyEpoch, ErrShredded)
	}
	return h.KeyEpoch, h.WrappedDEK, nil // fails below with ErrUnknownEpoch
}

// errRekeyed is keyFor's mark (not a failure) that the key it returns came
// from a rekey event: the event's own DEK, whatever the header's format.
var errRekeyed = errors.New("rekeyed")

// batchCache keeps the last batch key a reader unwrapped: consecutive
// format-2 or -3 events of one append request share it, so a replay unwraps one
// key a request instead of one an event. Not safe for concurrent use: one
// per reader goroutine.
type batchCache struct {
	epoch   uint32
	wrapped [WrappedKeySize]byte
	keys    *crypto.BatchKey
	// id and dek: EventKey's arguments, kept here so that deriving a DEK
	// allocates nothing (see crypto.BatchKey.EventKey)
	id  [IDSize]byte
	dek [crypto.KeySize]byte
}

// derive returns the DEK of event h under the cached batch key.
func (bc *batchCache) derive(h *Header) [crypto.KeySize]byte {
	bc.id = h.ID
	bc.keys.EventKey(bc.dek[:], bc.id[:])
	dek := bc.dek
	clear(bc.dek[:])
	return dek
}

// dataKey returns the DEK of event h under kr: unwrapped from the header
// (format 1), derived from the header's batch key and the event id (formats
// 2 and 3), or unwrapped from the newest rekey event naming it. bc may be nil.
func dataKey(kr *crypto.Keyring, h *Header, rekeys func() (*Rekeys, error), bc *batchCache) ([crypto.KeySize]byte, error) {
	var dek [crypto.KeySize]byte
	if bc != nil && bc.keys != nil && h.BatchKeyed() && bc.epoch == h.KeyEpoch && bc.wrapped == h.WrappedDEK {
		// The next event of the batch whose key this reader unwrapped
		// from a header under an epoch the keyring held: the same key,
		// without asking the keyring (a lock both replay workers took
		// for every event).
		return bc.derive(h), nil
	}
	epoch, wrapped, err := keyFor(kr, h, rekeys)
	rekeyed := errors.Is(err, errRekeyed)
	if err != nil && !rekeyed {
		return dek, err
	}
	if !rekeyed && h.BatchKeyed() {
		if bc == nil {
			bc = &batchCache{}
		}
		if bc.keys == nil || bc.epoch != epoch || bc.wrapped != wrapped {
			w, err := kr.Wrapper(epoch)
			if err != nil {
				return dek, err
			}
			var bk [crypto.KeySize]byte
			err = w.Unwrap(bk[:], wrapped[:])
			if err == nil {
				bc.keys, err = crypto.NewBatchKey(bk[:])
			}
			clear(bk[:])
			if err != nil {
				bc.keys = nil
				return dek, fmt.Errorf("unwrap batch key: %w", err)
			}
			bc.epoch, bc.wrapped = epoch, wrapped
		}
		return bc.derive(h), nil
	}
	w, err := kr.Wrapper(epoch)
	if err != nil {
		return dek, err
	}
	if err := w.Unwrap(dek[:], wrapped[:]); err != nil {
		return dek, fmt.Errorf("unwrap data key: %w", err)
	}
	return dek, nil
}

// decryptResolved is DecryptWith, looking the DEK up in the rekey events
// (rekeys, built on demand) when the event's own epoch was rotated away.
func decryptResolved(kr *crypto.Keyring, raw []byte, rekeys func() (*Rekeys, error)) (*Event, error) {
	return decryptBody(kr, raw, rekeys, nil)
}

// decState is what one replay worker reuses from event to event: the
// plaintext buffer (the decoded body copies what it keeps) and the last
// batch key.
type decState struct {
	scratch []byte
	batch   batchCache
	strs    strCache // the last session and role decoded
	// hashed: the caller hashed raw itself (verify, import), so the event
	// comes back without its Hash rather than hashing every body twice.
	hashed bool
	// checkOnly: the caller drops the event (verify, import: the body is
	// decoded only to check it), so every body is decrypted into the
	// scratch buffer and a store's content shares it, instead of a buffer
	// of its own an event (a fifth of verify's allocated bytes), a store
	// body is decoded into store, and decryptBody returns a nil event on
	// success.
	checkOnly bool
	store     Store
	open      crypto.Opener // one cipher value for every body the worker opens
	aad       [aadSize]byte // a format-4 seal's associated data (sealAAD)
}

// eventStore is a store event and its body in one allocation (a replay
// makes one an event).
type eventStore struct {
	ev Event
	s  Store
}

// newEventStore returns a store event with room for a plaintext of n
// bytes after it, in one allocation: the content string shares the
// plaintext, so the two live and die together anyway, and a replay made
// two allocations an event of them (issue 26). The plaintext is not
// scanned by the collector: it follows every pointer of the struct. A
// plaintext over the largest size gets a buffer of its own.
func newEventStore(n int) (*eventStore, []byte) {
	switch {
	case n <= 352-eventStoreSize:
		x := new(eventStore352)
		return &x.eventStore, x.b[:0:n]
	case n <= 384-eventStoreSize:
		x := new(eventStore384)
		return &x.eventStore, x.b[:0:n]
	case n <= 416-eventStoreSize:
		x := new(eventStore416)
		return &x.eventStore, x.b[:0:n]
	case n <= 448-eventStoreSize:
		x := new(eventStore448)
		return &x.eventStore, x.b[:0:n]
	case n <= 480-eventStoreSize:
		x := new(eventStore480)
		return &x.eventStore, x.b[:0:n]
	case n <= 512-eventStoreSize:
		x := new(eventStore512)
		return &x.eventStore, x.b[:0:n]
	case n <= 576-mallocHeader-eventStoreSize:
		x := new(eventStore576)
		return &x.eventStore, x.b[:0:n]
	case n <= 640-mallocHeader-eventStoreSize:
		x := new(eventStore640)
		return &x.eventStore, x.b[:0:n]
	case n <= 704-mallocHeader-eventStoreSize:
		x := new(eventStore704)
		return &x.eventStore, x.b[:0:n]
	case n <= 768-mallocHeader-eventStoreSize:
		x := new(eventStore768)
		return &x.eventStore, x.b[:0:n]
	case n <= 896-mallocHeader-eventStoreSize:
		x := new(eventStore896)
		return &x.eventStore, x.b[:0:n]
	case n <= 1024-mallocHeader-eventStoreSize:
		x := new(eventStore1024)
		return &x.eventStore, x.b[:0:n]
	case n <= 1152-mallocHeader-eventStoreSize:
		x := new(eventStore1152)
		return &x.eventStore, x.b[:0:n]
	case n <= 1280-mallocHeader-eventStoreSize:
		x := new(eventStore1280)
		return &x.eventStore, x.b[:0:n]
	case n <= 1408-mallocHeader-eventStoreSize:
		x := new(eventStore1408)
		return &x.eventStore, x.b[:0:n]
	case n <= 1536-mallocHeader-eventStoreSize:
		x := new(eventStore1536)
		return &x.eventStore, x.b[:0:n]
	case n <= 1792-mallocHeader-eventStoreSize:
		x := new(eventStore1792)
		return &x.eventStore, x.b[:0:n]
	case n <= 2048-mallocHeader-eventStoreSize:
		x := new(eventStore2048)
		return &x.eventStore, x.b[:0:n]
	case n <= 2304-mallocHeader-eventStoreSize:
		x := new(eventStore2304)
		return &x.eventStore, x.b[:0:n]
	case n <= 2688-mallocHeader-eventStoreSize:
		x := new(eventStore2688)
		return &x.eventStore, x.b[:0:n]
	case n <= 3072-mallocHeader-eventStoreSize:
		x := new(eventStore3072)
		return &x.eventStore, x.b[:0:n]
	case n <= 3200-mallocHeader-eventStoreSize:
		x := new(eventStore3200)
		return &x.eventStore, x.b[:0:n]
	case n <= 3456-mallocHeader-eventStoreSize:
		x := new(eventStore3456)
		return &x.eventStore, x.b[:0:n]
	}
	return new(eventStore), make([]byte, 0, n)
}

// eventStoreSize is the struct's size: each eventStoreN takes N bytes,
// one of the runtime's size classes (Go 1.26's, from 352 to 3,456 bytes;
// the next, 4 KB, would waste more than a second allocation does), so
// that only the plaintext's own rounding up to the next size is unused,
// as when it had an allocation of its own (TestEventStoreSizes). Over 512
// bytes the runtime puts a header of mallocHeader bytes before an object
// that holds pointers (measured: without it, a 450-byte plaintext took
// 1,024 bytes, not 896).
const (
	eventStoreSize = int(unsafe.Sizeof(eventStore{}))
	mallocHeader   = 8
)

type eventStore352 struct {
	eventStore
	b [352 - eventStoreSize]byte
}

type eventStore384 struct {
	eventStore
	b [384 - eventStoreSize]byte
}

type eventStore416 struct {
	eventStore
	b [416 - eventStoreSize]byte
}

type eventStore448 struct {
	eventStore
	b [448 - eventStoreSize]byte
}

type eventStore480 struct {
	eventStore
	b [480 - eventStoreSize]byte
}

type eventStore512 struct {
	eventStore
	b [512 - eventStoreSize]byte
}

type eventStore576 struct {
	eventStore
	b [576 - mallocHeader - eventStoreSize]byte
}

type eventStore640 struct {
	eventStore
	b [640 - mallocHeader - eventStoreSize]byte
}

type eventStore704 struct {
	eventStore
	b [704 - mallocHeader - eventStoreSize]byte
}

type eventStore768 struct {
	eventStore
	b [768 - mallocHeader - eventStoreSize]byte
}

type eventStore896 struct {
	eventStore
	b [896 - mallocHeader - eventStoreSize]byte
}

type eventStore1024 struct {
	eventStore
	b [1024 - mallocHeader - eventStoreSize]byte
}

type eventStore1152 struct {
	eventStore
	b [1152 - mallocHeader - eventStoreSize]byte
}

type eventStore1280 struct {
	eventStore
	b [1280 - mallocHeader - eventStoreSize]byte
}

type eventStore1408 struct {
	eventStore
	b [1408 - mallocHeader - eventStoreSize]byte
}

type eventStore1536 struct {
	eventStore
	b [1536 - mallocHeader - eventStoreSize]byte
}

type eventStore1792 struct {
	eventStore
	b [1792 - mallocHeader - eventStoreSize]byte
}

type eventStore2048 struct {
	eventStore
	b [2048 - mallocHeader - eventStoreSize]byte
}

type eventStore2304 struct {
	eventStore
	b [2304 - mallocHeader - eventStoreSize]byte
}

type eventStore2688 struct {
	eventStore
	b [2688 - mallocHeader - eventStoreSize]byte
}

type eventStore3072 struct {
	eventStore
	b [3072 - mallocHeader - eventStoreSize]byte
}

type eventStore3200 struct {
	eventStore
	b [3200 - mallocHeader - eventStoreSize]byte
}

type eventStore3456 struct {
	eventStore
	b [3456 - mallocHeader - eventStoreSize]byte
}

func decryptBody(kr *crypto.Keyring, raw []byte, rekeys func() (*Rekeys, error), st *decState) (*Event, error) {
	h, err := DecodeHeader(raw)
	if err != nil {
		return nil, err
	}
	// The text of a store or edit body is decrypted into a buffer of its
	// own that its strings then share (decodeBody's alias); any other body
	// into the worker's scratch buffer, which its decoding copies out of.
	alias := h.Type == TypeStore || h.Type == TypeEdit
	scratch := st != nil && (!alias || st.checkOnly)
	var bc *batchCache
	var dst []byte
	if st != nil {
		bc = &st.batch
		if scratch {
			dst = st.scratch[:0]
		}
	}
	dek, err := dataKey(kr, &h, rekeys, bc)
	if err != nil {
		if errors.Is(err, ErrShredded) {
			return nil, err
		}
		return nil, fmt.Errorf("decrypt seq %d: %w", h.Seq, err)
	}
	var es *eventStore
	if !scratch && alias && len(raw) >= HeaderSize+crypto.TagSize {
		n := len(raw) - HeaderSize - crypto.TagSize
		if h.Type == TypeStore && st != nil {
			es, dst = newEventStore(n)
		} else {
			dst = make([]byte, 0, n)
		}
	}
	var plain []byte
	if st != nil {
		plain, err = st.open.Open(h.Cipher(), dst, dek[:], sealAAD(raw, &st.aad), raw[HeaderSize:])
	} else {
		var aad [aadSize]byte
		plain, err = crypto.OpenWith(h.Cipher(), dst, dek[:], sealAAD(raw, &aad), raw[HeaderSize:])
	}
	clear(dek[:])
	if err != nil {
		return nil, fmt.Errorf("decrypt seq %d: %w", h.Seq, err)
	}
	if scratch && cap(plain) <= maxKeptBuf {
		st.scratch = plain[:0]
	}
	var in *strCache
	var into *Store
	if st != nil {
		in = &st.strs
		if h.Type == TypeStore {
			if st.checkOnly {
				into = &st.store
			} else {
				if es == nil {
					es = new(eventStore)
				}
				into = &es.s
			}
		}
	}
	body, err := decodeBodyCheck(h.Type, plain, &h, alias, in, into, st != nil && st.checkOnly)
	if scratch {
		clear(plain) // the scratch buffer outlives the event: no plaintext left in it
	}
	if st != nil && st.checkOnly {
		st.store = Store{} // nothing of the checked body kept
	}
	if err != nil {
		return nil, fmt.Errorf("seq %d: %w", h.Seq, err)
	}
	if st != nil && st.checkOnly {
		return nil, nil // checked; the caller wants nothing of it
	}
	var ev *Event
	if es != nil {
		ev = &es.ev
	} else {
		ev = new(Event)
	}
	*ev = Event{Header: h, Body: body}
	if st == nil || !st.hashed {
		ev.Hash = HashRaw(raw)
	}
	return ev, nil
}

// shreddedEvent is the event Events hands out for a shredded one.
func shreddedEvent(raw []byte) (*Event, error) {
	h, err := DecodeHeader(raw)
	if err != nil {
		return nil, err
	}
	return &Event{Header: h, Hash: HashRaw(raw), Body: &Shredded{Of: h.Type}}, nil
}

// buildRekeys reads the rekey events of the log in dir (seqs 1..to; 0: all).
// Rekey events are opened newest first: an older rotation's rekey events
// are themselves rewrapped by the newer ones, or, sealed under an epoch
// no longer held and superseded, skipped.
func buildRekeys(dir string, kr *crypto.Keyring, to uint64) (*Rekeys, error) {
	var raws [][]byte
	err := scanFiles(dir, 1, to, func(seq uint64, raw []byte) error {
		if len(raw) > 1 && Type(raw[1]) == TypeRekey {
			raws = append(raws, append([]byte(nil), raw...))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read rekey events: %w", err)
	}
	rk := NewRekeys()
	var bodies []*Rekey
	for i := len(raws) - 1; i >= 0; i-- {
		ev, err := decryptResolved(kr, raws[i], func() (*Rekeys, error) { return rk, nil })
		if err != nil {
			if errors.Is(err, ErrShredded) || errors.Is(err, crypto.ErrUnknownEpoch) {
				continue
			}
			return nil, err
		}
		r, ok := ev.Body.(*Rekey)
		if !ok {
			return nil, fmt.Errorf("seq %d: %w: header says rekey", ev.Seq, ErrMalformed)
		}
		rk.Add(r)
		bodies = append(bodies, r)
	}
	sort.SliceStable(bodies, func(i, j int) bool { return bodies[i].Epoch < bodies[j].Epoch })
	out := NewRekeys()
	for _, r := range bodies {
		out.Add(r)
	}
	return out, nil
}

// rekeyCache is a log's lazily built Rekeys: built on the first read of an
// event whose epoch the keyring lacks (never, on a log that was not
// rotated), dropped when a rekey event is written.
type rekeyCache struct {
	mu sync.Mutex
	rk *Rekeys
}

// Rekeys returns the log's rekey map (built from its rekey events on first
// use).
func (l *Log) Rekeys() (*Rekeys, error) {
	if l.opts.Keys == nil {
		return nil, ErrNoKeys
	}
	l.rekeys.mu.Lock()
	defer l.rekeys.mu.Unlock()
	if l.rekeys.rk != nil {
		return l.rekeys.rk, nil
	}
	head, _ := l.Head()
	rk, err := buildRekeys(l.dir, l.opts.Keys, head)
	if err != nil {
		return nil, err
	}
	if head == 0 {
		return rk, nil
	}
	l.rekeys.rk = rk
	return rk, nil
}

// forgetRekeys drops the cached map after rekey events were written, or
// after the keyring changed.
func (l *Log) forgetRekeys() {
	l.rekeys.mu.Lock()
	l.rekeys.rk = nil
	l.rekeys.mu.Unlock()
}

// KeysChanged tells the log its keyring changed epochs (a key rotation).
func (l *Log) KeysChanged() { l.forgetRekeys() }

// decrypt opens one event with the log's keys and rekey events.
func (l *Log) decrypt(raw []byte) (*Event, error) {
	return decryptResolved(l.opts.Keys, raw, l.Rekeys)
}

// decryptReuse is decrypt reusing a worker's state (decState).
func (l *Log) decryptReuse(raw []byte, st *decState) (*Event, error) {
	return decryptBody(l.opts.Keys, raw, l.Rekeys, st)
}

// Shredded reports whether the event at seq was shredded by a rotation:
// its content is gone by design.
func (l *Log) Shredded(seq uint64) (bool, error) {
	raw, err := l.Raw(seq)
	if err != nil {
		return false, err
	}
	_, err = l.decrypt(raw)
	if errors.Is(err, ErrShredded) {
		return true, nil
	}
	return false, err
}

// ForEachHeader calls fn with the header of every event in from..to (to 0:
// the head), CRC-checked, without decrypting.
func (l *Log) ForEachHeader(ctx context.Context, from, to uint64, fn func(h *Header) error) error {
	return l.Records(ctx, from, to, func(r *Record) error { return fn(&r.Header) })
}

// DataKey returns the DEK of the event with header h: unwrapped from its
// header (formats 2 and 3: derived from the batch key there), or from the rekey
// events when its epoch was rotated away. A key rotation rewraps this
// key, never a batch key: see the package doc.
func (l *Log) DataKey(h *Header) ([crypto.KeySize]byte, error) {
	if l.opts.Keys == nil {
		return [crypto.KeySize]byte{}, ErrNoKeys
	}
	dek, err := dataKey(l.opts.Keys, h, l.Rekeys, nil)
	if err != nil && !errors.Is(err, ErrShredded) {
		return dek, fmt.Errorf("data key of seq %d: %w", h.Seq, err)
	}
	return dek, err
}

// SwapKeys runs fn with no commit in progress and returns the head after
// it: a key rotation switches the keyring's current epoch in fn, so every
// event after the returned head is wrapped under the new epoch.
func (l *Log) SwapKeys(fn func() error) (uint64, error) {
	defer l.exclusive()()
	if err := fn(); err != nil {
		return 0, err
	}
	l.forgetRekeys()
	head, _ := l.Head()
	return head, nil
}

// CountShredded counts the events up to the head whose content a key
// rotation shredded, from their headers and the rekey events (no body is
// decrypted).
func (l *Log) CountShredded(ctx context.Context) (uint64, error) {
	kr := l.opts.Keys
	if kr == nil {
		return 0, ErrNoKeys
	}
	var n uint64
	var rk *Rekeys
	err := l.ForEachHeader(ctx, 0, 0, func(h *Header) error {
		if kr.Has(h.KeyEpoch) {
			return nil
		}
		if rk == nil {
			var err error
			if rk, err = l.Rekeys(); err != nil {
				return err
			}
		}
		if _, _, err := keyFor(kr, h, func() (*Rekeys, error) { return rk, nil }); errors.Is(err, ErrShredded) {
			n++
		}
		return nil
	})
	return n, err
}
