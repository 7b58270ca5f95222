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
//   - Share key: 32 random bytes per share grant, RSA-OAEP-SHA256-wrapped
//     to the grantee's wallet key. The OAEP label binds it to its grantor
//     (ShareBinding, frozen by testdata/share-key-v2.golden):
//     "ucl share key v2" 0x00 ‖ grantor address ‖ 0x00 ‖ log id ‖ grant id.
//     The grantee unwraps with the grantor, log and grant it verified (the
//     signer of the disclosure and of the segments), so a grant re-signed
//     by a third wallet, which needs no secret to copy the bytes, does not
//     unwrap, and nothing under it decrypts. Keys of the old v1 label
//     ("ucl share key v1", bound to nothing) are refused
//     (ErrUnboundShareKey): the grantor revokes and grants again.
//
// # Deletion
//
// A tombstone hides content from every projection but the ciphertext stays on
// Arweave and the current vault key still unwraps its DEK. Durable erasure
// (shredding, `ucl keys rotate`, ucl.Store.RotateKeys) makes a new vault-key
// epoch: live DEKs are rewrapped under it (rekey events in the log) and the
// old epoch's key is wiped from the keyring and the key file, after which no
// one holding only the store's keys can decrypt the tombstoned ciphertext.
// Copies of the old key made before (recovery codes) are outside the
// store's reach: they must be destroyed by whoever holds them. Passphrase
// sealing of the vault key file is not implemented yet; the file's
// protection is its 0600 mode.
package crypto
