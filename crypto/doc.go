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
//     sealed under the DEK with the event header as AAD, with the AEAD its
//     log format names (AEAD: ChaCha20-Poly1305 in log format 3,
//     AES-256-GCM in formats 1 and 2; ChaCha20-Poly1305's key setup is a
//     copy of the key, AES-GCM's cost more than opening a typical body).
//     Because every DEK seals exactly one plaintext, the nonce is the
//     all-zero nonce: uniqueness comes from the key, which saves 12 bytes per
//     event. A DEK must therefore never be used for a second plaintext.
//   - Batch key (log formats 2 and 3): the events of one append request share one
//     random 32-byte batch key BK, wrapped once per request, and each
//     event's DEK is derived from it and the event's 16-byte id
//     (BatchKey: K1‖K2 = AES-256(BK, "ucl/event-key/2"‖j) for j = 0..3,
//     DEK = AES-256(K1, id) ‖ AES-256(K2, id); golden:
//     testdata/batch-key.golden). Event ids are unique in a log, so every
//     DEK still seals one plaintext. A DEK reveals nothing of its
//     siblings: it is what a key rotation rewraps and a share discloses,
//     never BK, so shredding one event of a batch still erases exactly it.
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
// store's reach: they must be destroyed by whoever holds them.
//
// # Vault key file
//
// DIR/vault.key (mode 0600, written atomically) is either plain JSON
//
//	{"version": 1, "current": E, "keys": {"E": base64(key), ...}}
//
// or that JSON sealed with a passphrase (`ucl keys seal`, Keyring.SealWith;
// golden: testdata/vault.sealed.golden; decoder fuzzed, FuzzOpenSealed):
//
//	off len field
//	  0   8 magic "UCLSEAL\x01" (the last byte is the format version)
//	  8   1 KDF: 1 = scrypt (golang.org/x/crypto/scrypt)
//	  9   1 log2 N   (cost; DefaultScrypt: 15)
//	 10   1 r        (DefaultScrypt: 8)
//	 11   1 p        (DefaultScrypt: 1)
//	 12  16 salt     (random per seal)
//	 28  12 nonce    (random per write)
//	 40   … AES-256-GCM(key = scrypt(passphrase, salt, N, r, p, 32),
//	        nonce, AAD = bytes 0..39) of the plain JSON, with its 16-byte tag
//
// A header asking the KDF for more than 256 MiB (128·r·N), p > 16, an
// unknown version or KDF, or a sealed text over 1 MiB is ErrBadKeyFile
// before any key is derived. A wrong passphrase and a changed byte are
// the same error (ErrBadPassphrase): the AEAD cannot tell them apart. A
// keyring opened from a sealed file keeps the derived key (not the
// passphrase) in memory, so the rewrites of a key rotation stay sealed
// under the same passphrase with a fresh nonce. Sealing protects the key
// file only: what else is on disk in plaintext is listed in the README
// ("Encryption at rest").
package crypto
