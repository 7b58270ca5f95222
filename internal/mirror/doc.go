// Package mirror mirrors ucl's log to Arweave and reads it back: the
// segment and tag formats, the mirror state, push (Syncer), rebuild, share
// disclosures and checkpoints. It reaches Arweave only through Gateway (and
// an arweave.Uploader for segment batches); package arweave is the
// transport and satisfies both (see its doc for timeouts, size bounds,
// retries and the arlocal quirks).
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
// # Share disclosures
//
// An upload of UC-Kind "grant" (PostDisclosure, L1) is a disclosure: the
// grantor hands the grantee named by UC-Grantee the data keys of some of its
// events (the share_grant event, and later the tombstones and the revoke
// that concern it), wrapped under the grant's share key, with the share key
// RSA-OAEP-wrapped to the grantee. Its UC-Seq-First / UC-Seq-Last are the
// smallest and largest disclosed seq and UC-Head-Hash the hash of the event
// at the last. The data format is in share.go (DecodeDisclosure).
// FetchDisclosures finds a grantee's disclosures and checks each
// transaction's signature (Gateway.FetchVerifiedTx).
//
// # Checkpoints
//
// A checkpoint transaction (PostCheckpoint, L1, Content-Type text/plain)
// carries App-Name, App-Version, Content-Type, UC-Kind "checkpoint",
// UC-Log-Id, UC-Tree-Size (decimal), UC-Root (hex), UC-Note-Key and, after
// the first, UC-Prev-Checkpoint; its data is the signed note and a
// consistency proof (the format is log.Anchor's, see the log package doc).
// FindCheckpoints lists an owner's checkpoints of a log by tree size.
// arweave.Client.FetchVerifiedTx trusts the gateway for nothing but the
// block height: it checks a transaction's id against its signature, the RSA-PSS signature
// against the owner key (over tags and data root), computes the owner
// address from the key, and checks the fetched data against the data root.
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
// Through a bundler (arweave.BundlerUploader, SyncConfig.RecheckSubmitted)
// each segment is one data item and the state records the item id. An
// accepted item can still be lost (a bundler that acknowledged it and
// never bundled it): Push then asks about submitted segments too, and one
// that neither the gateway nor the bundler holds is dropped from the state
// and uploaded again (a new item: the signature, and so the id, differ).
// A segment is confirmed only once the gateway shows the item mined.
//
// A mirror is permanent, so Push never claims or uploads anything on top of
// a history the local log does not share (*DivergedError, ErrDiverged):
//
//   - Before anything else, the local event at the highest mirrored seq
//     (MirrorSummary.CoveredSeq) must hash to the head hash the state
//     recorded. A log cut below that seq (torn-tail repair) fails even
//     before it grows again ("local log ends at seq N"); one that regrew
//     with new events fails on the hash. The segmenter's prev hash for the
//     first seq to upload is that checked hash.
//   - After the GraphQL scan, every segment of this wallet and log that
//     reaches past the covered prefix must agree with the local log at its
//     last seq (its UC-Head-Hash tag). A device restored from an older
//     backup that appended new events finds the original device's segments
//     there and refuses, naming the seq, both hashes and the transaction;
//     so does a log whose head is below a mirrored seq.
//
// Because every event embeds its predecessor's hash, agreement at one seq
// vouches for every seq before it. The second check sees what the gateway
// has indexed: two devices pushing the same seqs within the indexing delay
// can still fork the mirror, and Rebuild then reports the fork (below). The mirror state is a bbolt file; a
// damaged one (bbolt panics on a zeroed page) gives ErrMirrorStateCorrupt,
// never a panic, and may simply be deleted.
//
// # Reading back
//
// Rebuild finds every segment of a log by owner through GraphQL (pages of
// 100 with cursors), orders them by UC-Seq-First (never gateway order), drops
// duplicates (same range and head hash), verifies the owner (SHA-256 of the
// RSA modulus is the address), each segment's Merkle root and head hash, and
// the continuity between segments, names missing ranges with *GapError and
// yields records in seq order. Each segment it uses (or that claims a fork)
// must also carry the owner's own signature (arweave.VerifySigned): GraphQL reports
// the signed fields (signature, anchor, recipient, fee, quantity, tags,
// owner key), and the fetched data is checked with them either as an
// ANS-104 data item (RSA-PSS over the deep hash of "dataitem", "1", the
// signature type, owner, target, anchor, the Avro-encoded tags and the data;
// goar's VerifyBundleItem) or as a format-2 transaction (goar's
// VerifyTransaction, the data root computed from the data). Bundled items,
// which /tx/{id} does not serve, are checked this way without fetching
// their bundle. A segment signed by another wallet, or whose data or tags
// the gateway altered, is refused (*TxRejectedError wrapping
// ErrTxSignature).
//
// Forks: every valid segment the chain does not use is checked against the
// chain when the chain reaches the segment's last seq; a different head
// hash there (confirmed by fetching and decoding that segment) means two
// histories were uploaded for the same seqs. Rebuild then returns a
// *ForkError (ErrForked) naming both transactions, their ranges and the
// seqs they share, instead of silently picking the longer one. Records
// before the point of detection may already have been yielded; the caller
// discards them. RebuildOptions.Branch names a transaction whose history to
// follow: segments overlapping it are set aside, as are later segments that
// contradict the chain through it or that only continue the set-aside
// branch (after the hole its removal leaves, or failing to link to the
// chosen head); RebuildResult.SetAside lists them all.
package mirror
