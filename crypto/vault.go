package crypto

import (
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// Keyring is the set of vault-key epochs a store can still use. The highest
// epoch is current: new events wrap their DEK under it.
type Keyring struct {
	mu       sync.Mutex
	keys     map[uint32][]byte
	current  uint32
	wrappers map[uint32]*Wrapper
	seal     *seal // set: Save writes the file sealed (seal.go)
}

// NewKeyring returns a keyring with one fresh random key at epoch 1.
func NewKeyring() (*Keyring, error) {
	k, err := NewKey()
	if err != nil {
		return nil, err
	}
	return KeyringFrom(map[uint32][]byte{1: k})
}

// KeyringFrom builds a keyring from epoch → key.
func KeyringFrom(keys map[uint32][]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("build keyring: %w: no keys", ErrBadKeyFile)
	}
	kr := &Keyring{keys: map[uint32][]byte{}, wrappers: map[uint32]*Wrapper{}}
	for e, k := range keys {
		if e == 0 || len(k) != KeySize {
			return nil, fmt.Errorf("build keyring: %w: epoch %d key of %d bytes", ErrBadKeyFile, e, len(k))
		}
		kr.keys[e] = append([]byte(nil), k...)
		if e > kr.current {
			kr.current = e
		}
	}
	return kr, nil
}

// Current returns the current epoch.
func (kr *Keyring) Current() uint32 {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	return kr.current
}

// Epochs returns the epochs held, ascending.
func (kr *Keyring) Epochs() []uint32 {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	out := make([]uint32, 0, len(kr.keys))
	for e := range kr.keys {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Wrapper returns the (cached) key wrapper of an epoch.
func (kr *Keyring) Wrapper(epoch uint32) (*Wrapper, error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if w, ok := kr.wrappers[epoch]; ok {
		return w, nil
	}
	k, ok := kr.keys[epoch]
	if !ok {
		return nil, fmt.Errorf("epoch %d: %w", epoch, ErrUnknownEpoch)
	}
	w, err := NewWrapper(k)
	if err != nil {
		return nil, err
	}
	kr.wrappers[epoch] = w
	return w, nil
}

// Fingerprint identifies the keyring's current key without revealing it
// (first 8 bytes of SHA-256 over a domain-separated key), so a store can tell
// "wrong vault key" from "corrupt data" before writing anything.
func (kr *Keyring) Fingerprint() string {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	return fingerprint(kr.current, kr.keys[kr.current])
}

type vaultFile struct {
	Version int               `json:"version"`
	Current uint32            `json:"current"`
	Keys    map[string]string `json:"keys"` // epoch → base64 (std) key
}

// Save writes the keyring to path (mode 0600) atomically.
func (kr *Keyring) Save(path string) error {
	kr.mu.Lock()
	vf := vaultFile{Version: 1, Current: kr.current, Keys: map[string]string{}}
	for e, k := range kr.keys {
		vf.Keys[fmt.Sprint(e)] = encodeB64(k)
	}
	sl := kr.seal
	kr.mu.Unlock()
	b, err := json.MarshalIndent(vf, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if sl != nil {
		return writeSealed(path, sl, b)
	}
	return fsutil.WriteFileAtomic(path, b, 0o600)
}

// LoadKeyring reads a vault key file written by Save, or a file holding a
// recovery code (as written by `ucl keys export`). A sealed file is
// ErrSealed: LoadKeyringPassphrase opens it.
func LoadKeyring(path string) (*Keyring, error) {
	return loadKeyring(path, nil, nil)
}

// parseKeyFile decodes the plain key file (or recovery code) b read from
// path.
func parseKeyFile(path string, b []byte) (*Keyring, error) {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, recoveryPrefix) {
		return ParseRecoveryCode(s)
	}
	var vf vaultFile
	if err := json.Unmarshal(b, &vf); err != nil {
		return nil, fmt.Errorf("parse vault key %s: %w: %v", path, ErrBadKeyFile, err)
	}
	if vf.Version != 1 {
		return nil, fmt.Errorf("parse vault key %s: %w: version %d", path, ErrBadKeyFile, vf.Version)
	}
	keys := map[uint32][]byte{}
	for es, ks := range vf.Keys {
		var e uint32
		if _, err := fmt.Sscan(es, &e); err != nil {
			return nil, fmt.Errorf("parse vault key %s: %w: epoch %q", path, ErrBadKeyFile, es)
		}
		k, err := decodeB64(ks)
		if err != nil {
			return nil, fmt.Errorf("parse vault key %s: %w: %v", path, ErrBadKeyFile, err)
		}
		keys[e] = k
	}
	kr, err := KeyringFrom(keys)
	if err != nil {
		return nil, err
	}
	if vf.Current != kr.current {
		return nil, fmt.Errorf("parse vault key %s: %w: current epoch %d not the newest", path, ErrBadKeyFile, vf.Current)
	}
	return kr, nil
}

const recoveryPrefix = "UCL1-"

// LoadKeyArg reads a vault key given as a recovery code or as the path of a
// key file. Its errors never repeat the argument when it looks like a code:
// a mistyped code is almost the key.
func LoadKeyArg(arg string) (*Keyring, error) {
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(arg)), recoveryPrefix) {
		return ParseRecoveryCode(arg)
	}
	kr, err := LoadKeyring(arg)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read vault key: %w: no such file, and not a recovery code (those start with %q)", ErrBadKeyFile, recoveryPrefix)
	}
	return kr, err
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// RecoveryCode exports the current epoch's key as a human-copyable code:
// "UCL1-" then base32 of epoch (4 bytes BE) ‖ key ‖ CRC-32 (4 bytes BE) in
// groups of 5 characters. The checksum catches typos on import. Only the
// current epoch is exported: older epochs are kept only until shredded.
func (kr *Keyring) RecoveryCode() string {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	raw := make([]byte, 0, 4+KeySize+4)
	raw = binary.BigEndian.AppendUint32(raw, kr.current)
	raw = append(raw, kr.keys[kr.current]...)
	raw = binary.BigEndian.AppendUint32(raw, crc32.ChecksumIEEE(raw))
	s := b32.EncodeToString(raw)
	var groups []string
	for len(s) > 5 {
		groups = append(groups, s[:5])
		s = s[5:]
	}
	groups = append(groups, s)
	return recoveryPrefix + strings.Join(groups, "-")
}

// ParseRecoveryCode reverses RecoveryCode. Spaces, dashes and case are
// ignored; a checksum mismatch is reported as a typo.
func ParseRecoveryCode(code string) (*Keyring, error) {
	s := strings.ToUpper(strings.TrimSpace(code))
	if !strings.HasPrefix(s, recoveryPrefix) {
		return nil, fmt.Errorf("parse recovery code: %w: it must start with %q", ErrBadKeyFile, recoveryPrefix)
	}
	s = strings.NewReplacer("-", "", " ", "", "\n", "", "\t", "").Replace(s[len(recoveryPrefix):])
	raw, err := b32.DecodeString(s)
	if err != nil || len(raw) != 4+KeySize+4 {
		return nil, fmt.Errorf("parse recovery code: %w: wrong length or characters", ErrBadKeyFile)
	}
	if crc32.ChecksumIEEE(raw[:4+KeySize]) != binary.BigEndian.Uint32(raw[4+KeySize:]) {
		return nil, fmt.Errorf("parse recovery code: %w: checksum mismatch (a typo?)", ErrBadKeyFile)
	}
	return KeyringFrom(map[uint32][]byte{binary.BigEndian.Uint32(raw[:4]): raw[4 : 4+KeySize]})
}
