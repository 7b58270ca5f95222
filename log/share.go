package log

import (
	"fmt"

	"github.com/unlimitedcontext/ucl/crypto"
)

// DEK returns the data key of the event raw (header ‖ body), unwrapped from
// its header under kr (formats 2 and 3: derived from the batch key its header
// wraps; never the batch key, which would open the batch's other events). A share grant carries DEKs rewrapped under a share
// key, so the grantee decrypts exactly the granted events.
func DEK(kr *crypto.Keyring, raw []byte) ([]byte, error) {
	return dekResolved(kr, raw, nil)
}

// DEK is the package DEK for an event of l: after a key rotation, an
// event of a wiped epoch has its data key in the newest rekey event naming
// it, and a shredded one has none (ErrShredded).
func (l *Log) DEK(raw []byte) ([]byte, error) {
	if l.opts.Keys == nil {
		return nil, ErrNoKeys
	}
	return dekResolved(l.opts.Keys, raw, l.Rekeys)
}

func dekResolved(kr *crypto.Keyring, raw []byte, rekeys func() (*Rekeys, error)) ([]byte, error) {
	h, err := DecodeHeader(raw)
	if err != nil {
		return nil, err
	}
	dek, err := dataKey(kr, &h, rekeys, nil)
	if err != nil {
		return nil, fmt.Errorf("data key of seq %d: %w", h.Seq, err)
	}
	return dek[:], nil
}

// DecryptWithDEK decrypts raw with its data key given directly (a key
// disclosed by a share grant). The AEAD's tag over the body and the header
// (its associated data, sealAAD) makes a wrong key or altered bytes an
// error, never a wrong event.
func DecryptWithDEK(raw, dek []byte) (*Event, error) {
	h, err := DecodeHeader(raw)
	if err != nil {
		return nil, err
	}
	var aad [aadSize]byte
	plain, err := crypto.OpenWith(h.Cipher(), nil, dek, sealAAD(raw, &aad), raw[HeaderSize:])
	if err != nil {
		return nil, fmt.Errorf("decrypt seq %d: %w", h.Seq, err)
	}
	body, err := decodeBody(h.Type, plain, &h, true) // plain is this event's alone
	if err != nil {
		return nil, fmt.Errorf("seq %d: %w", h.Seq, err)
	}
	return &Event{Header: h, Hash: HashRaw(raw), Body: body}, nil
}
