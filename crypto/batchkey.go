package crypto

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
)

// batchKeyLabel is the 15-byte label of a batch key's expansion blocks
// (label ‖ counter). Wire constant: do not change.
const batchKeyLabel = "ucl/event-key/2"

// BatchKey derives the data keys of the events of one batch (a log format
// 2 append request) from one random batch key BK (see the package doc):
//
//	K1 = AES-256(BK, label‖0) ‖ AES-256(BK, label‖1)
//	K2 = AES-256(BK, label‖2) ‖ AES-256(BK, label‖3)   (label "ucl/event-key/2")
//	DEK(id) = AES-256(K1, id) ‖ AES-256(K2, id)         (id: the 16-byte event id)
//
// Two AES block encryptions per event, where unwrapping a key of its own
// is twelve: the point of the format. DEK is a PRF of the id (two
// permutations under independent keys), so the DEK of one event says
// nothing about its batch's other events: a data key disclosed or rewrapped
// alone (a share, a key rotation) opens exactly its event.
type BatchKey struct{ k1, k2 cipher.Block }

// NewBatchKey expands a 32-byte batch key.
func NewBatchKey(bk []byte) (*BatchKey, error) {
	if len(bk) != KeySize {
		return nil, fmt.Errorf("new batch key: key is %d bytes, want %d", len(bk), KeySize)
	}
	b, err := aes.NewCipher(bk)
	if err != nil {
		return nil, fmt.Errorf("new batch key: %w", err)
	}
	var k [2 * KeySize]byte
	for j := 0; j < 4; j++ {
		var in [16]byte
		copy(in[:], batchKeyLabel)
		in[15] = byte(j)
		b.Encrypt(k[16*j:16*j+16], in[:])
	}
	defer clear(k[:])
	var bkk BatchKey
	if bkk.k1, err = aes.NewCipher(k[:KeySize]); err != nil {
		return nil, fmt.Errorf("new batch key: %w", err)
	}
	if bkk.k2, err = aes.NewCipher(k[KeySize:]); err != nil {
		return nil, fmt.Errorf("new batch key: %w", err)
	}
	return &bkk, nil
}

// EventKey writes the DEK of the event with the 16-byte id into
// dst[:KeySize]. Both slices reach the block cipher's interface and so
// live on the heap: a hot loop passes memory it reuses (a replay worker's
// state), not fresh local arrays, or each call allocates them.
func (b *BatchKey) EventKey(dst, id []byte) {
	_, _ = dst[KeySize-1], id[15]
	b.k1.Encrypt(dst[:16], id[:16])
	b.k2.Encrypt(dst[16:KeySize], id[:16])
}
