package crypto

import "fmt"

// Has reports whether the keyring holds the key of an epoch.
func (kr *Keyring) Has(epoch uint32) bool {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	_, ok := kr.keys[epoch]
	return ok
}

// FingerprintOf is Fingerprint for any epoch held ("" when it is not).
func (kr *Keyring) FingerprintOf(epoch uint32) string {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	k, ok := kr.keys[epoch]
	if !ok {
		return ""
	}
	return fingerprint(epoch, k)
}

// Fingerprints returns the fingerprint of every epoch held.
func (kr *Keyring) Fingerprints() []string {
	var out []string
	for _, e := range kr.Epochs() {
		out = append(out, kr.FingerprintOf(e))
	}
	return out
}

// KeyOf returns a copy of an epoch's key (nil when it is not held). Tests
// use it to prove a shredded key left no trace.
func (kr *Keyring) KeyOf(epoch uint32) []byte {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	k, ok := kr.keys[epoch]
	if !ok {
		return nil
	}
	return append([]byte(nil), k...)
}

// Clone returns an independent copy of the keyring.
func (kr *Keyring) Clone() *Keyring {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	c := &Keyring{keys: map[uint32][]byte{}, current: kr.current, wrappers: map[uint32]*Wrapper{}, seal: kr.seal}
	for e, k := range kr.keys {
		c.keys[e] = append([]byte(nil), k...)
	}
	return c
}

// WithNewEpoch returns a copy of the keyring holding one more epoch (the
// current one + 1, with a fresh random key), which becomes current.
func (kr *Keyring) WithNewEpoch() (*Keyring, error) {
	k, err := NewKey()
	if err != nil {
		return nil, err
	}
	c := kr.Clone()
	c.keys[c.current+1] = k
	c.current++
	return c, nil
}

// Adopt makes kr hold exactly the epochs of other (the same keys), so the
// log that shares kr switches to other's current epoch at once.
func (kr *Keyring) Adopt(other *Keyring) {
	other.mu.Lock()
	keys := map[uint32][]byte{}
	for e, k := range other.keys {
		keys[e] = append([]byte(nil), k...)
	}
	cur := other.current
	sl := other.seal
	other.mu.Unlock()
	kr.mu.Lock()
	defer kr.mu.Unlock()
	for e, k := range kr.keys {
		if _, ok := keys[e]; !ok {
			// Overwrite the dropped key's bytes: the in-memory copy is
			// the last one this process holds.
			clear(k)
		}
	}
	kr.keys, kr.current, kr.wrappers = keys, cur, map[uint32]*Wrapper{}
	if sl != nil {
		kr.seal = sl // read from the sealed file: it stays sealed
	}
}

// Without returns a copy of the keyring without an epoch. Dropping the
// current epoch (undoing a rotation that never used it) makes the newest
// remaining one current; the last epoch cannot be dropped.
func (kr *Keyring) Without(epoch uint32) (*Keyring, error) {
	c := kr.Clone()
	k, ok := c.keys[epoch]
	if !ok {
		return c, nil
	}
	if len(c.keys) == 1 {
		return nil, fmt.Errorf("drop epoch %d: it is the only one", epoch)
	}
	clear(k)
	delete(c.keys, epoch)
	c.current = 0
	for e := range c.keys {
		c.current = max(c.current, e)
	}
	return c, nil
}
