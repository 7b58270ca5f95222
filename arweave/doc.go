// Package arweave mirrors ucl's log to Arweave and reads it back.
//
// # Segments
//
// The unit of upload is a segment: a contiguous, non-empty range of encoded
// log records (events) with a fixed-size header. All integers are
// little-endian. The layout is frozen by testdata/segment-v1.golden; the
// constants marked "do not change" in segment.go are wire format.
//
//	offset size  field
//	     0    4  magic "UCSG"
//	     4    2  format version (1)
//	     6    2  flags (reserved, must be 0)
//	     8   16  log id
//	    24    8  first seq (>= 1)
//	    32    8  last seq (= first + count - 1)
//	    40    4  count (>= 1)
//	    44   32  prev hash: hash of event first-1, all zero when first == 1
//	    76   32  head hash: hash of event last
//	   108   32  Merkle root over the hashes of events first..last
//	   140       count records, each: u32 length, then length bytes (the raw
//	             encoded event exactly as the log stores it)
//
// The record for seq first+i is the i-th record; seqs are not repeated per
// record. An event's hash is SHA-256 of its raw bytes. Nothing may follow the
// last record.
//
// The Merkle tree is the RFC 6962 (Certificate Transparency) tree over the
// event hashes h[0..n-1]:
//
//	MTH({h})      = SHA-256(0x00 ‖ h)
//	MTH(h[0..n))  = SHA-256(0x01 ‖ MTH(h[0..k)) ‖ MTH(h[k..n)))
//	                where k is the largest power of two smaller than n.
//
// DecodeSegment verifies the magic, version, flags, count, seq arithmetic,
// that prev hash is zero for a segment starting at seq 1, that every record
// is complete and nothing trails, that SHA-256 of the last record equals the
// head hash and that the Merkle root matches. It does not parse records:
// whether each record's own "prev" field links to its predecessor is checked
// by the caller (see RebuildOptions.VerifyRecord), and the link between
// segments (prev hash = previous segment's head hash) is checked by Rebuild.
//
// # Tags
//
// Every upload carries the tags of DESIGN.md §5 (see Tags): App-Name,
// App-Version, Content-Type, UC-Schema-Version, UC-Log-Id (hex),
// UC-Seq-First, UC-Seq-Last (decimal), UC-Head-Hash (hex), UC-Kind and, on
// grants, UC-Grantee. Tags never carry plaintext content or session names.
// They are hints for search only: Rebuild trusts the decoded, verified
// segment, and rejects a transaction whose tags disagree with its bytes.
//
// # Mirror state and sync
//
// State (bbolt) records, per segment, its range, head hash, transaction id,
// bundle id, status (posting → submitted → confirmed), block height and byte
// size. A segment becomes "submitted" only after the gateway accepted the
// transaction. Because a transaction id is fixed once it is signed, the id is
// written (status posting) before it is posted, so a crash between posting
// and bookkeeping is resolved by asking the gateway about that id. Syncer
// also scans GraphQL for this log's segments by the wallet before uploading
// and adopts a remote segment whose range and head hash match the local log,
// so running sync twice, or after losing the state, never uploads a range
// twice.
//
// # Reading back
//
// Rebuild finds every segment of a log by owner through GraphQL (pages of
// 100 with cursors), orders them by UC-Seq-First (never gateway order), drops
// duplicates (same range and head hash), verifies the owner (SHA-256 of the
// RSA modulus is the address), each segment's Merkle root and head hash, and
// the continuity between segments, names missing ranges with *GapError and
// yields records in seq order.
//
// # Uploads
//
// L1 mode (default) posts one format-2 transaction per segment; bundle mode
// posts one ANS-104 bundle per batch of segments, each segment an item
// signed by the same wallet. Data up to Options.MaxInlineBytes (4 MiB) is
// posted inside the transaction JSON, larger data as /chunk posts. Every
// call takes a context; each HTTP attempt is bounded by RequestTimeout and
// retried with jittered exponential backoff on timeouts, connection errors,
// 5xx and 429, never on other 4xx. When a POST /tx fails ambiguously the
// gateway is asked about the (already fixed) id before failing, so a lost
// answer does not turn into a duplicate upload.
//
// # goar
//
// github.com/everFinance/goar v1.6.3 is used for keys, transaction signing,
// chunking and ANS-104 bundle items. Its HTTP client is not used: it takes no
// context, prints download progress to stdout (Client.DownloadChunkData,
// client_broadcast.go) and its GetTransactionData can return wrong bytes when
// uploads overlap. This package talks HTTP itself (every call takes a
// context) and never calls a goar function that writes to stdout. goar's
// log15 logger is silenced when this package is initialised (SilenceGoar).
//
// goar's chunker (utils.GenerateChunks) rounds the rebalanced second-to-last
// chunk down where the protocol rounds up, so for data over 256 KiB with an
// odd size and size mod 256 KiB under 32 KiB its data_root differs from the
// node's: an inline post is rejected and a chunked one breaks the strict
// data split. chunks.go computes chunks, proofs and data_root correctly and
// SignTx installs them before goar signs.
//
// # arlocal quirks (arlocal 1.1.66, see arlocaltest)
//
//   - GET /tx/{id}/status answers 200 "Pending" for unmined transactions
//     (a node answers 202), and 404 for bundled items; Status handles both
//     (GraphQL fallback for items).
//   - A POST /tx that hits an internal error (e.g. a duplicate id on a
//     retried post) answers 404 "Not Found"; PostTx then checks the id.
//   - A bundle posted inline is unbundled synchronously and its items are
//     visible (pending) at once. A bundle posted as chunks is unbundled
//     asynchronously after the last chunk, and /mine racing with that
//     unbundling fails with 404 (SQLITE UNIQUE constraint) without mining.
//     Bundles are therefore kept under MaxInlineBytes (SyncConfig.BatchBytes).
//   - /mine dedupes a chunked bundle's chunks by content hash, so a bundle
//     with two identical 256 KiB chunks would be corrupted.
//   - GraphQL returns newest first by default and pages of at most 100.
package arweave
