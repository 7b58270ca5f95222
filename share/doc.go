// Package share is sharing (DESIGN.md §4): grants of live chunks to another
// Arweave wallet, their disclosure to the grantee, and the grantee's
// verified copy of what it was granted. The engine (package ucl) resolves a
// grant's scope, appends the events this package builds, calls Disclose
// from its push, and keeps the shared projections over Source. Everything
// here works on an Env: the log, the store's wallet address and log id,
// and its directory.
//
// # Grants
//
// A grant is a share_grant event in the grantor's own log (its body format
// is in package log's doc): a fresh share key, RSA-OAEP-wrapped to the
// grantee, and the granted chunks with their events (v3; v1/v2 grants
// carried the chunks' DEKs in the body). NewGrant builds it, Revoke the
// share_revoke event that ends it.
//
// The share key is bound to the grantor (crypto.ShareBinding, Binding: the
// RSA-OAEP label names the grantor's address, log id and the grant's event
// id, drawn before the grant is appended). Anyone can re-post a grantor's
// public segments and disclosures under their own signature; the grantee
// unwraps with the signer it verified, so such a copy yields no key and is
// rejected. Grants of the unbound v1 format are refused at the grantee.
//
// # Disclosure
//
// The grantee cannot read the grantor's log (its bodies are sealed under
// the grantor's vault key), so each push discloses to the grantee, in
// signed uploads tagged UC-Grantee (the disclosure format is in the
// internal/mirror package doc), the DEK of the grant event itself with
// those of its chunks whose content still exists, then of every later
// tombstone that removes a granted chunk and of the revoke. A chunk
// tombstoned and shredded by a key rotation before the grant's first push
// is never keyed to the grantee (it learns the id, hidden); an old-format
// grant carrying such a chunk's DEK is withheld, never disclosed.
//
// A grant that follows its session (share_grant v2 flag) also covers the
// chunks stored in the session after it: each push discloses their DEKs
// under the grant's share key, in the same disclosures, until the revoke.
// They are not written as follow-up grant events in the log: the grant
// event records the intent, and the disclosures, signed by the wallet, are
// the record of what was sent.
//
// What was disclosed is kept in DIR/share-push.json (JSON, indented):
//
//	{"scanned": N,                 events 1..N were looked at
//	 "grants": [{"id", "seq", "grantee",
//	             "disclosed": S,   events up to S are dealt with
//	             "closed",         revoked and its revoke disclosed, or withheld
//	             "follow", "followed": [chunk], "granted": [chunk],
//	             "tx_ids": [...], "withheld"}]}
//	chunk: {"id", "session", "time_ms"}, what tombstone matching needs of it
//
// "granted" records the granted chunks at the first push that saw the
// grant, for the pushes after a rotation shreds some of them. Losing the
// file (a store rebuilt from Arweave), or a file that does not read, only
// makes the next push disclose again what was disclosed: the grantee
// ignores repeats.
//
// # The grantee's side
//
// Fetch finds the disclosures addressed to this wallet, verifies each
// grantor's log like a rebuild does (every segment's transaction signature
// and owner, the segments' Merkle roots, the hash chain, and the newest
// checkpoint the grantor anchored: proof.CheckLog), and decrypts only what
// the grants disclose; a disclosure is used only if every key in it opens
// its event. Replace then replaces the shared area (a grant whose
// disclosures this pull rejected keeps its last verified state):
//
//	DIR/shared/<grantor address>/<log id>.json    what was received (receivedLog)
//	DIR/shared/<grantor address>/<log id>.events  the granted events, as the
//	                                              grantor's log has them:
//	                                              uvarint(len) ‖ raw, by seq
//
// The .json file is {"grantor", "log_id", "grants": [grant]}, a grant being
// Received's fields with "share_key" (as wrapped to this wallet) and
// "keys": [{"seq", "wrapped"}] (each live chunk's DEK under the share key).
// The area is only ever written whole by a pull (built beside in
// DIR/shared.new, then swapped in by renames; a swap cut short leaves
// DIR/shared.old, which is read instead), never by anything else, and the
// grantor's events never enter this store's own log. Keys stay wrapped on
// disk: the share key under this wallet's RSA key, the DEKs under the share
// key.
//
// # The shared sequence
//
// Source feeds the shared projections: the live granted chunks of the
// shared area as one sequence of store events, grantors by address, then
// logs by id, then the grantor's seq order (a chunk granted twice is
// projected once). Each event keeps its header and body but gets the
// sequence's own seq, and the sequence has its own chain: hash n =
// SHA-256(hash n-1 ‖ grantor ‖ SHA-256 of the event's raw bytes in the
// grantor's log). The same area gives the same sequence, so the same
// projection digests on any device; any change to it changes the hashes
// from that point and the projector rebuilds (Replaced.Rebuild says when
// the engine must drop the old projections first: unless the sequence only
// grew, the text of chunks hidden since must not linger in their files).
// The chain needs no key: events are decrypted only when the projector
// reads them.
package share
