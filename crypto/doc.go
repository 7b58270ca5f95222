// Package crypto holds ucl's key material and the primitives that use it.
//
// # Keys
//
//   - Vault key: 32 random bytes made by `ucl init`, stored in the store
//     directory with mode 0600 and exportable as a recovery code. It is NOT
//     derived from the wallet: a key that can be re-derived can never be
//     erased, and erasure (shredding) is the point of the epoch scheme. Vault
//     keys are numbered by epoch; a Keyring holds the epochs still alive.
//   - Per-event data key (DEK): 32 random bytes per event. The event body is
//     sealed with AES-256-GCM under the DEK with the event header as AAD.
//     Because every DEK seals exactly one plaintext, the GCM nonce is the
//     all-zero nonce: uniqueness comes from the key, which saves 12 bytes per
//     event. A DEK must therefore never be used for a second plaintext.
//   - Key wrapping: a DEK travels wrapped with AES Key Wrap (RFC 3394) under
//     the vault key of an epoch, 40 bytes, integrity protected: unwrapping
//     under a wrong key fails with ErrWrongKey instead of yielding garbage.
//   - Wallet: an Arweave RSA-4096 JWK (arweave.Wallet, which owns its
//     parsing and signing). It signs Arweave transactions and is
//     the identity share grants are addressed to. Its address is
//     base64url(SHA-256(n)).
//
// # Deletion
//
// A tombstone hides content from every projection but the ciphertext stays on
// Arweave and the current vault key still unwraps its DEK. Durable erasure
// (shredding) needs a new vault-key epoch: live DEKs are rewrapped under it
// and the old epoch's key is wiped, after which no one can decrypt the
// tombstoned ciphertext. Passphrase sealing of the vault key file is not
// implemented yet; the file's protection is its 0600 mode.
package crypto
