// Package proof anchors a store's log on Arweave and proves events against
// the anchors: it keeps the store's Merkle tree (Merkle), anchors a
// checkpoint after each push (Anchor), builds an audit proof of one event
// (Prove), verifies a proof file without a store or a key and without
// trusting the gateway (Verify), and checks a log fetched from Arweave (a
// rebuild's, a grantor's) against the newest checkpoint its wallet
// anchored (CheckLog). The engine (package ucl) calls it with a Log: the
// log, its id and its tree; nothing here opens a store.
//
// # Formats (specified where they are encoded)
//
//   - The Merkle tree (RFC 6962 over event hashes), kept in DIR/merkle
//     (MerkleDir; derived data, rebuilt from the log when missing): log/doc.go
//     "Merkle tree".
//   - The checkpoint note, the proof file (`ucl audit prove`, JSON) and the
//     anchor data (note + consistency proof from the previous checkpoint):
//     log/doc.go "Checkpoints and proofs" and "Checkpoint anchors".
//   - The checkpoint transaction's tags (UC-Kind "checkpoint",
//     UC-Prev-Checkpoint, the note key): internal/mirror/doc.go
//     "Checkpoints". A checkpoint transaction's data is read up to 64 KiB.
//
// # Anchoring
//
// After a push mirrored events 1..N, Anchor posts a checkpoint of N events
// signed by the wallet's note key (crypto.NoteKey), chained to the newest
// checkpoint of at most N events the wallet anchored for the log (its
// UC-Prev-Checkpoint and a consistency proof from its size), unless one of
// N events exists already. A previous checkpoint whose root is not this
// log's is ErrCheckpointDiverged: nothing is anchored over a fork.
//
// # Verifying
//
// Verify checks, in order: the proof itself (note signature, header,
// inclusion path), offline; the anchoring transaction's RSA-PSS signature,
// that its owner key hashes to the proof's owner, its data (the note) and
// tags, and that the note key is the one the owner's signed transaction
// publishes; then every later checkpoint the same owner anchored for the
// log (each checked the same way) must extend the one before it through
// the consistency proofs the transactions carry (else ErrHistoryRewritten),
// and each one's UC-Prev-Checkpoint must name a checkpoint the gateway
// lists (else ErrCheckpointHidden). With several gateways configured, each
// one's newest checkpoint is compared (CompareGateways) and a disagreement
// is said in the result's sentence. Every refusal is ErrProofRejected with
// the failed check named; a gateway that cannot answer is another error,
// never a rejection and never a success.
package proof
