// Package log is ucl's write-ahead log: the only source of truth. Every store,
// tombstone, share grant and rekey is an event appended here; projections,
// snapshots and the Arweave mirror are derived from it.
//
// # Event
//
// An event is a plaintext header and an encrypted body. The header is readable
// without keys (so an auditor can walk the chain), and authenticated: it is
// covered by the hash, and (all of it before format 4, the fields known
// before the event takes its place in the chain from format 4) it is the
// AAD of the body's AEAD seal.
//
//	header (HeaderSize = 110 bytes, little-endian, fixed layout):
//	  off  len  field
//	    0    1  format version            (FormatVersion = 4; 1 to 3 are read)
//	    1    1  type                      (1 store, 2 tombstone, 3 share_grant,
//	                                        4 share_revoke, 5 rekey, 6 edit)
//	    2    8  seq        uint64         dense, from 1
//	   10    8  time       int64          append time, unix milliseconds
//	   18   16  event id                  client-supplied or random; the
//	                                        idempotency key
//	   34    4  key epoch  uint32         vault-key epoch the key below is wrapped under
//	   38   40  wrapped key               RFC 3394 wrap of a 32-byte key:
//	                                        versions 2 to 4: the batch key BK
//	                                        of the append request the event came
//	                                        in (the same 40 bytes in each of its
//	                                        events); version 1: the event's DEK
//	   78   32  prev                      hash of event seq-1; zeros for seq 1
//	body: AEAD(DEK, nonce = 12 zero bytes, AAD) of the encoded plaintext
//	      body; len(plaintext) + 16 bytes. The DEK seals one body only.
//	      AEAD: versions 3 and 4 ChaCha20-Poly1305 (RFC 8439); versions 1
//	      and 2 AES-256-GCM.
//	      AAD: versions 1 to 3 the header; version 4 the 26 bytes
//	      version ‖ type ‖ time ‖ event id (header bytes 0-1 and 10-33).
//	DEK (versions 2 to 4) = crypto.BatchKey(BK).EventKey(event id):
//	      K1 ‖ K2 = AES-256(BK, "ucl/event-key/2" ‖ j), j = 0..3 (one block each)
//	      DEK = AES-256(K1, id) ‖ AES-256(K2, id)
//
//	hash(event) = SHA-256(header ‖ body)   versions 1 to 3
//	hash(event) = SHA-256(body ‖ header)   version 4 (package eventhash)
//
// Format 2 exists for cost: unwrapping a key is twelve AES blocks and was
// a fifth of a replay's CPU (issue 26); deriving it is two, and a reader
// unwraps each batch key once (it keeps the last one). One request is one
// batch (AppendBatch, Append, a group commit's requests each their own),
// so event ids are unique under a batch key (a request's repeated id is
// one event) and every DEK still seals one body. The headers of one
// request share their wrapped key, which tells a reader of the headers
// (an auditor, Arweave) which events were appended together; the hash
// chain's order and times told most of that already. A version-1 event
// (logs written before) is read as before; a log may hold both.
//
// Format 3 is format 2 with the body sealed by ChaCha20-Poly1305 instead
// of AES-256-GCM, also for cost: every event has a key of its own, and
// AES-GCM's setup for a key (the AES key expansion, the GHASH key's
// powers, 1,280 bytes on the heap for the collector) cost more than
// opening a typical body, where ChaCha20-Poly1305's is a copy of the key.
// Measured on this machine (crypto's BenchmarkOpenWith, CPU time, setup
// included): 0.40 against 0.60-0.67 µs for a 200-byte body, 0.60-0.67
// against 0.67-0.87 µs for 560 bytes; from about 2 KB AES-GCM's faster
// bulk wins it back (1.0-1.4 against 1.4-2.0 µs), but a chunk of
// DefaultChunkTokens is under that. Replaying 512-byte events, CPU an
// event fell by a tenth to a fifth (issue 26's note has the runs). The keys, the header and what a
// rekey or a share carries are format 2's. The version byte alone says
// which cipher opens the body; logs may hold all three versions, and
// versions 1 and 2 are read as before.
//
// Format 4 is format 3 with a seal and a hash that leave out what only
// the chain's order decides, again for cost. The seq, the key epoch and
// wrapped key (a key rotation between a request's preparation and its
// commit rewraps the key) and prev are written when the event takes its
// place in the chain, one event after another; in format 3 they were the
// AAD of the seal and the start of the hashed bytes, so the seal and all
// of the hashing ran there, a serial half of a batched append's CPU. In
// format 4 a body is sealed under AAD known before (the version, type,
// time and event id: the id decides the DEK, and a changed wrapped key or
// epoch gives another DEK, which the seal refuses), and hashed before the
// header, so an appender seals it and hashes it on any core and keeps the
// SHA-256 state after it; the chain's order finishes the hash with the
// header (two or three SHA-256 blocks). The fields left out of the AAD are
// bound by the hash chain, as every field is; a reader hashes as many
// blocks as before. Measured on the machine of issue 26 (2 cores, where
// waking an idle core takes ~110 µs), batches of 256 from one writer:
// wall time an event 6-17% lower without fsync, CPU 3-13% higher; with an
// fsync a batch 0.71 -> 0.78 of etcd's rate in one bench run, inside the
// spread of paired runs; replay
// unchanged (issue 26's note of stop 43 has the runs). Versions 1 to 3
// are read and verified as before; a log may hold all four.
//
// The chain is the sequence of hashes: event n's prev is hash(event n-1).
// "raw" below means header ‖ body: the bytes that are mirrored to Arweave
// and hashed (by the rule of their version) and verified by anyone.
//
// # Bodies
//
// Each body starts with its own schema version byte, then fields in a fixed
// order. Strings and byte strings are uvarint length-prefixed; integers are
// fixed-width little-endian unless named uvarint; maps are encoded sorted by
// key, so every body has exactly one encoding (canonical). Decoders reject
// unknown versions, trailing bytes and out-of-range values.
//
//	store v1:      version=1, flags u8, kind u8 (1 conversation, 2 document,
//	               3 knowledge, 4 tool_call, 5 profile), session str, role str,
//	               content str, then by flags:
//	                 0x01 chunk id str       (absent: the event id in hex)
//	                 0x02 parent str
//	                 0x04 chunk_parent str, chunk_index uvarint
//	                 0x08 meta: uvarint n, n × (key str, value str), keys sorted, unique
//	                 0x10 content time int64 ms (absent: the header time)
//	store v2:      version=2, the v1 layout, then by the flags v2 adds (a body
//	               that uses neither is encoded as v1, so v1 stays canonical
//	               and older logs read unchanged; v2 without them is rejected):
//	                 0x20 tool call: name str (non-empty), args str (JSON text
//	                      or ""), status str; content is the result (may be
//	                      empty), parent the triggering message; kind must be
//	                      tool_call; of a chunked result only chunk 0 has it
//	                 0x40 supersedes: uvarint n (≥ 1) × item id str
//	edit v1:       version=1, target str (the item: a chunk id, or the chunk
//	               parent of a chunked item), prev uvarint (seq of the first
//	               event of the version replaced; 0 on all but the first
//	               chunk), by str, removes (uvarint n × chunk id: chunks of
//	               the previous version the new one does not overwrite), then
//	               a complete store body (v1 or v2, defaults from this
//	               event's header) whose chunk id is the target or whose
//	               chunk parent is. An edit of a chunked item is one edit
//	               event per new chunk, appended as one batch. Projections
//	               apply it as "drop removes, then store the chunk"; the
//	               chunk's content time is the original's, the header time
//	               is the time of the edit.
//	tombstone v1:  version=1, chunk ids (uvarint n, n × str), session str,
//	               from int64 ms, to int64 ms (both 0: no time range), reason str
//	share_grant v1: version=1, grantee str (Arweave address), wrapped share key
//	               bytes (RSA-OAEP-SHA256), sessions (uvarint n × str), chunk
//	               ids (uvarint n × str), keys (uvarint n × (seq uint64, 40-byte
//	               DEK wrapped under the share key))
//	share_grant v2: the v1 fields, then flags u8 (0x01 follow: chunks stored
//	               later in the granted sessions are disclosed too; other bits
//	               rejected), note str, own key str (the 32-byte share key, or
//	               empty). Written only when one of these is set (else v1).
//	share_grant v3: version=3, grantee str, wrapped share key bytes, sessions,
//	               chunk ids (as v1), seqs (uvarint n ≥ 1, n × uint64 LE,
//	               strictly ascending from 1: seq i is the event of chunk id i),
//	               flags u8, note str, own key str (32 bytes, required) as v2.
//	               No keys: the grantor's push discloses each granted event's
//	               DEK under the share key, and only while its content exists,
//	               so a chunk tombstoned and shredded by a key rotation before
//	               the grant is disclosed leaves the grantee no key to its
//	               ciphertext (with v1/v2 the grant body itself carried it).
//	               Written for every new grant; v1 and v2 are still read.
//	share_revoke v1: version=1, grant event id [16], grantee str, reason str
//	rekey v1:      version=1, new epoch uint32, keys (uvarint n × (seq uint64,
//	               40-byte DEK wrapped under the new epoch))
//
// # Size
//
// The encoded body of a store or edit event is at most MaxEventSize
// (1 MiB) bytes; Append, AppendBatch and Check refuse a larger one with
// ErrTooLarge and write nothing of the request. 1 MiB is about 250K tokens,
// more than any model writes in one reply, and it keeps what one event
// costs every reader bounded: measured on this machine, one adversarial
// 8 MiB turn (no repeated words) took the full-text build to 700 MB and
// 70 s, 1 MiB 170 MB. Longer text is a document (chunked, each chunk far
// under the bound); the faces say so (ucl store/append, REST, MCP) or,
// where they must store something (the proxy's record of a reply), keep
// a bounded prefix with a marker. Share grants, rekeys and tombstones are
// not bound by it: they carry one key or id per chunk they name, and no
// projection reads text from them. Reading is not bound: a log written
// before the rule keeps its events, and the projections bound what they
// analyse of each chunk on their own (the summaries read 64 KiB).
//
// The text of one item that is split into chunks (a document, a tool
// call's arguments and result) is at most MaxDocumentSize (2 MiB) before
// it is split; CheckDocumentSize says ErrDocumentTooLarge (with
// ErrTooLarge), and the faces refuse the request whole (ucl store/append,
// REST 413, MCP). Its chunks are projected in one catch-up, whose
// full-text batch costs memory with the text's distinct words: with a
// 1 MiB turn beside it, 2 MiB of never-repeating words kept session list
// under 270 MB, 4 MiB took it to 345-370 MB. A bound per catch-up (many
// smaller events projected at once) is not set: executing the full-text
// batch by size instead made bleve's segment merges peak at 1.6 GB.
//
// # Rekey events and shredded events
//
// A rekey event (written by a vault-key rotation, ucl.Store.RotateKeys) is
// sealed like any event, under the new epoch it names, and carries the DEKs
// of earlier events rewrapped under that epoch: each event's own DEK, for
// a version-2 event the one derived from its batch key (Log.DataKey),
// never the batch key. So shredding one event of a batch works as with
// per-event keys: the rotation rewraps the derived DEKs of the batch's
// live events one by one, the batch key stays wrapped only under the
// wiped epoch, and nothing left opens the tombstoned event (a DEK is a PRF
// output: it does not lead to its siblings' or to BK;
// TestShredOneEventOfBatch). A rekey entry is always a DEK, whatever the
// version of the event it names. Shares disclose the derived DEK likewise. The DEK of event s is the
// one in its own header when the keyring holds the header's epoch, else the
// one in the newest rekey event naming s under an epoch the keyring holds
// (Rekeys, built on first need by reading the log's rekey events, newest
// first). An event whose epoch the keyring lacks, that no such rekey event
// names, in a log whose newest rekey epoch is newer than its own and held,
// was left out of a rotation on purpose (tombstoned content): it is
// shredded. Decrypt returns ErrShredded for it, Events hands it out with a
// *Shredded body (header only) and VerifyDir counts it instead of failing:
// unreadable by design, not damage. Without any rekey event, a missing
// epoch stays crypto.ErrUnknownEpoch (a wrong keyring). Import checks the
// seal of an event only when its epoch is held or not older than the
// keyring's current one; older ones are checked when read, through the
// rekey events that follow them.
//
// # On disk
//
// The log is a github.com/tidwall/wal directory in binary format: segment
// files named by their first index in 20 decimal digits (the index is the
// seq), each entry framed as uvarint(length) ‖ data. A file is closed and
// the next started before a write when it holds more than SegmentSize
// bytes, and within a write as soon as it reaches SegmentSize (tidwall's
// rule). ucl writes these files itself (segwrite.go: one reused buffer a
// write, where tidwall grows one buffer the size of the open segment) and
// reads them itself; the bytes are tidwall's, file for file
// (TestTailWriterMatchesTidwall), so logs written before and after are the
// same format.
//
// The open (last) segment file may go on past its entries with zero bytes:
// the writer preallocates the space ahead of its writes (fallocate, as
// etcd's WAL does, then, under sync and group durability, zeros written
// over it, as PostgreSQL fills its WAL files; 64 KiB or twice the write
// ahead, at most 1 MiB, never past the segment size), so that an fdatasync
// after an append does not also journal the file's growth or the
// conversion of unwritten extents. A zero byte where an entry's length would
// start, with only zeros after it, is the end of the entries: unused space,
// not a tear. The writer cuts the file back to its entries when it closes
// the log or starts the next file, so a closed store's files are exactly
// their entries, as before; only a store left by a crash has a zero tail.
// A binary from before preallocation cuts a bare zero tail as a torn
// write, but refuses a store whose last write was torn into it (the torn
// entry's length no longer runs past the end of the file) until its
// explicit repair cuts there: seen with a kill -9 during a large append.
// The framing has no checksum, so ucl's entry data is
//
//	raw ‖ CRC-32C(raw)    (4 bytes, little-endian)  the last entry of a write batch
//	raw ‖ ^CRC-32C(raw)   (the bitwise complement)  every other entry of the batch
//
// The CRC catches torn writes and flipped bits, including in the last event,
// whose hash nothing else covers yet; the hash chain catches everything else
// (a replaced or reordered event). The CRC is not part of the hash and is not
// mirrored. Its complement marks "more of this batch follows": one
// AppendBatch (or one group commit, or one Import) is one WAL write whose
// last entry alone carries the plain CRC, so a batch that spans segment
// files and was cut short by a crash is recognisable and dropped whole.
// Logs written before the mark existed have only final entries (batches of
// one), and read as before.
//
// Beside the segments, the file HEAD records the newest acknowledged event:
//
//	"UCLHEAD\x01" (8) ‖ seq uint64 ‖ hash [32] ‖ flags u8 (bit 0: written
//	under sync/group durability) ‖ CRC-32C of the preceding 49 bytes
//
// It is rewritten in place after every commit's write (and fsync) returns,
// without its own fsync: a crash can leave it older than the segments, never
// newer (under durability none, where nothing is fsynced, it is a hint).
//
// # Segment offset index
//
// A read of one event by seq (Raw, EventAt) reads just that entry, at its
// offset, instead of loading the segment file holding it. A sealed segment
// (one that has a successor) keeps its entries' offsets beside it in
// <segment name>.idx, written (temporary file, then rename, no fsync) the
// first time the whole segment is parsed cleanly, by a read or a range
// read, and reused by later processes:
//
//	"UCLSIDX\x01" (8; the last byte is the format version)
//	first    u64   seq of the segment's first entry (its file name)
//	size     u64   size of the segment file in bytes
//	count    u32   number of entries, > 0
//	offset   u32   × count: where each entry's length prefix starts;
//	               0 first, strictly increasing, each < size
//	crc      u32   CRC-32C of all the preceding bytes
//
// All integers are little-endian. The file is derived: a sidecar that does
// not decode, names another first seq or file size, or sends a read to
// bytes that are not the entry (offsets not increasing or past the file,
// length prefix not spanning exactly to the next offset, bad CRC, another
// seq in the header) is deleted and rebuilt
// from the segment, and that read is served as before, with the same
// errors. Cutting a segment (repair, rollback) deletes its sidecar first.
// Segments of 4 GiB or more get none. The last, growing segment's offsets
// are kept in memory only, extended by parsing the bytes appended since.
//
// # Valid tail and repair
//
// An append is acknowledged only after its fsync (durability "sync" and
// "group"). A crash can therefore leave, at the end of the log only, bytes of
// an unacknowledged write: an entry whose length runs past the end of the
// last file; a final entry with a bad CRC followed by nothing but zeros,
// whose written bytes stop at a 512-byte sector boundary inside it (the
// rest of a preallocated file is zeros) or that contains a zeroed sector;
// and entries after the last final entry (a batch whose end never reached
// the disk, possibly spanning several files). A write of which nothing
// reached the disk leaves only zeros: the unused space above, nothing to
// cut (the head mark still catches an acknowledged event missing). Open
// cuts exactly that: the cut bytes are copied aside into the store's
// corrupt/ directory, the files are truncated (later files removed) and
// fsynced, the log is re-verified, and the cut is reported (Log.Repaired,
// Options.Warn). Open refuses instead, with a *CorruptionError naming the
// seq, the segment file and the offset, and changes nothing, when
//   - the bytes after the break do not look torn (a bad CRC without a torn
//     sector, a break in any file but the last, a seq or prev that does not
//     follow);
//   - valid entries follow the break (ErrDamagedTail: a flipped length
//     prefix, say, not a tear);
//   - the cut, or the log as found, would end before the HEAD mark's seq or
//     Options.MinHead, or the event at the mark's seq has another hash
//     (ErrLost: acknowledged events are missing, e.g. a truncated file).
//
// Repair is the explicit way out of such a refusal: it cuts at the first
// damage, whatever follows, keeps every cut byte aside, and says what it cut.
//
// Open verifies the log from the HEAD mark on (the newest segment or two),
// not the whole history; it builds the event-id index on first use. Every
// read verifies the CRC, header, seq and prev of each event it touches, and
// VerifyDir checks everything.
//
// # Merkle tree
//
// For audit proofs the log is also an RFC 6962 Merkle tree (Tree, built with
// github.com/transparency-dev/merkle): leaf i (0-based) is the event of seq
// i+1, and its leaf hash is SHA-256(0x00 ‖ event hash); interior nodes are
// SHA-256(0x01 ‖ left ‖ right). The tree is derived data, kept in its own
// directory as one file per level ("level-00", "level-01", …), each the
// level's node hashes (32 bytes each) in index order: the nodes of every
// perfect subtree, so a root or an inclusion or consistency proof at any
// size reads O(log n) nodes. Level 0's length defines the size; higher
// levels are written first, and a crash is repaired on open by cutting
// files back to the size (a level shorter than that empties the tree, which
// CatchUp rebuilds from the log). CatchUp also checks that the log still
// holds the tree's last leaf and starts over if not.
//
// # Checkpoints and proofs
//
// A checkpoint is a C2SP tlog-checkpoint signed note (golang.org/x/mod/
// sumdb/note): text "ucl/<log id>\n<size>\n<root, std base64>\n", no
// extension lines, signed with Ed25519 under the note key derived from the
// wallet (crypto.NoteKey). A proof file (`ucl audit prove`) is JSON, version
// 1, with exactly these fields: version, log_id, seq, header (hex of the
// 110-byte header), body (std base64 of the still-encrypted body: with the
// header it recomputes the event hash, which binds the header to the leaf,
// and reveals nothing but its length), event_hash (hex), tree_size,
// inclusion (hex node hashes, leaf to root, as RFC 6962/transparency-dev
// order them), checkpoint (the signed note), note_key (its verifier key),
// checkpoint_tx and owner (the Arweave transaction anchoring the checkpoint
// and the wallet address that signed it), anchored_height. Proof.Verify
// checks all but the anchoring, which needs the gateway.
//
// # Checkpoint anchors
//
// `ucl sync push` anchors a checkpoint of the events it mirrored as its own
// Arweave transaction, signed by the store's wallet. Its data (Anchor,
// frozen by testdata/golden/checkpoint.anchor) is the signed note followed
// by a consistency proof from the previous anchored checkpoint:
//
//	<signed note>                        text, blank line, "— " signature lines
//	consistency <previous size>\n         decimal, canonical; 0 for the first
//	<node, std base64>\n                  × the RFC 6962 consistency proof
//	                                       from the previous size (none for 0)
//
// The note ends at the first line after its blank line that does not start
// with "— ". Carrying each step's proof in the transaction lets a verifier
// without the store chain every later checkpoint back to a proof's
// checkpoint: step k proves checkpoint k-1 a prefix of checkpoint k, so by
// induction each later one extends the proof's (VerifyChain). The transaction's tags are
// UC-Kind "checkpoint", UC-Log-Id, UC-Tree-Size, UC-Root (hex),
// UC-Prev-Checkpoint (the previous checkpoint's transaction id, absent for
// the first) and UC-Note-Key (the note verifier key, named after the wallet
// address). Tags and data are covered by the wallet's RSA-PSS transaction
// signature, which is what binds the Ed25519 note key to the wallet: a
// verifier accepts a note key only from a transaction whose owner key
// hashes to the proof's owner address and whose key name is that address.
//
// A store is owned by one process at a time (flock on the LOCK file); a
// second Open fails with ErrLocked.
package log
