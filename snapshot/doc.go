// Package snapshot saves, verifies, restores and publishes the state of every
// projection at one log position, so that a store (or a rebuild on another
// device) replays only the events after the snapshot instead of the whole
// log.
//
// # Local layout
//
// Snapshots live in DIR/snapshots, one directory each:
//
//	DIR/snapshots/<name>/manifest.json   plaintext manifest (below)
//	DIR/snapshots/<name>/archive.bin     encrypted archive of DIR/projections
//
// <name> is "s<seq, 12 digits>-<UTC creation time, ns>", so names sort by
// seq, then by creation time. A snapshot is built in DIR/snapshots/.tmp-<name>
// (files fsynced, directory fsynced) and renamed into place, then the parent
// is fsynced: a reader sees a whole snapshot or none. Leftover .tmp-*
// directories are removed by the next Create. Retention keeps the newest K
// (by name) after a successful Create.
//
// # Manifest (format version 2; field names are a wire format: do not change)
//
//	{
//	  "format": 2,                       // this spec's version (1 is read too)
//	  "name": "s000000001234-20240101T000000.000000000Z",
//	  "id": "<32 hex>",                  // random per snapshot
//	  "log_id": "<32 hex>",              // UC-Log-Id of the log
//	  "seq": 1234,                       // N: every projection's checkpoint
//	  "head_hash": "<64 hex>",           // hash of event N
//	  "created": "<RFC 3339, UTC>",
//	  "projections": [{"name": "timelines", "version": 1, "digest": "<64 hex>"}, ...],
//	  "embedder": {"name": "hash-v1/384", "model_hash": "<64 hex>"},
//	  "archive": {"file": "archive.bin", "size": S, "sha256": "<64 hex>",
//	              "frame_size": 1048576, "compression": "deflate", "plain_size": P},
//	  "key": {"epoch": 1, "wrapped": "<80 hex>"}
//	}
//
// The manifest is plaintext so that list and verify (except decryption) need
// no key; it reveals sizes, seqs and digests, never content. Projections are
// listed in the order the set applies them.
//
// "embedder" (format 2; present when the set has a vectors projection)
// names the embedder that made the vectors, as Embedder.Name reports it,
// and "model_hash" is the SHA-256 of its model files (absent for embedders
// without them: the built-in hash embedder, a server). Restore refuses a
// snapshot made with another embedder (ErrEmbedder) before extracting it.
// Format 1 manifests have no "embedder"; they are still read, and their
// binding is unchanged.
//
// # Archive (archive.bin)
//
// A fresh random 32-byte snapshot key K encrypts the archive; K is wrapped
// (AES key wrap, RFC 3394) under the vault key of the epoch recorded in the
// manifest. Shredding that epoch (ucl keys rotate) makes the snapshot
// unreadable, which is intended: it may hold tombstoned content.
//
//	header  "UCLSNAP1" ‖ frame size (uint32 BE)
//	frame*  length L (uint32 BE, 16 <= L <= frame size + 16) ‖ L bytes of AES-256-GCM output
//
// Frame i (from 0) is sealed with nonce = i (uint64 BE) ‖ 0x00000000, or
// ‖ 0x00000001 for the last frame, and AAD = the manifest's binding (below).
// Every frame but the last carries exactly frame-size plaintext bytes; the
// last carries 0..frame size. A stream that ends before a last frame, has
// bytes after it, or reorders frames fails authentication: truncation,
// extension and splicing are all detected.
//
// Binding = SHA-256("ucl-snapshot-v1" ‖ 0x00 ‖ id ‖ log id ‖ seq (uint64 BE)
// ‖ head hash ‖ for each projection: name ‖ 0x00 ‖ version (uint32 BE) ‖
// digest ‖ from format 2, when "embedder" is present: "embedder" ‖ 0x00 ‖
// name ‖ 0x00 ‖ model hash (0 or 32 bytes)). Editing any of those manifest
// fields makes every frame fail.
//
// The decrypted plaintext is a raw DEFLATE stream (RFC 1951; bbolt files are
// mostly free pages and compress about 8:1), nothing after it. Decompressed,
// it is a list of entries in lexical path order (filepath.WalkDir), with no
// timestamps, so the same state gives the same tree bytes:
//
//	"UCLSNAR1"
//	entry*  kind (1 byte: 'd' directory, 'f' file) ‖ path length (uvarint) ‖
//	        path (slash-separated, relative, clean) ‖ mode (uvarint, perm bits)
//	        ‖ for files: size (uvarint) ‖ size bytes
//	'e'     end marker, nothing after it
//
// # Restore
//
// Restore checks the manifest against the log (same log id, N <= head,
// HashAt(N) == head hash) and the archive's SHA-256, then decrypts and
// extracts into DIR/.projections-restore-* (next to DIR/projections, same
// file system). It renames DIR/projections aside to DIR/.projections-old-*,
// renames the extracted tree in and fsyncs DIR, then opens the set pinned at
// N and compares projections, versions, checkpoints and digests with the
// manifest. Only when they match is the old state removed; otherwise it is
// renamed back (the restored state never replaces a good one unverified).
// The same open set then replays N+1..head (opening the set once matters:
// the vector projection may rebuild its graph on open). A crash at any
// point leaves the old state, no state (rebuilt from the log on next open),
// or the restored state at a checkpoint on the chain; the next Restore
// tidies leftovers. Refusals are typed (ErrNoSnapshot, ErrCorrupt,
// ErrForeign, ErrAhead, ErrDiverged, ErrKey, ErrIncompatible, ErrEmbedder); with
// Fallback the projections are rebuilt from the log instead, and the
// result says so.
//
// Tombstoned content: the projections rewrite their files after removals
// (see packages timelines, summary, fts and projstd), so a snapshot created
// after a tombstone holds no trace of the removed text. Snapshots created
// before it still do, until retention prunes them (or they are deleted);
// published ones stay on Arweave, encrypted, readable until the vault key
// epoch they are wrapped under is shredded (`ucl keys rotate`).
//
// Create calls Flush on projections implementing Flusher before closing
// them, so state normally rebuilt on open (the vector graph) is archived.
//
// # Publishing
//
// Push uploads "UCLSNPB1" ‖ manifest length (uint32 BE) ‖ manifest JSON ‖
// archive.bin, split into parts of at most PartSize bytes, one Arweave
// transaction each, tagged (besides the common ucl tags, UC-Kind: snapshot,
// UC-Seq-First: 1, UC-Seq-Last: N, UC-Head-Hash) with UC-Snapshot-Id,
// UC-Part (0-based), UC-Parts and UC-Snapshot-Sha256 (of the whole
// published blob). FindPublished groups the parts, FetchPublished
// reassembles and checks them, and Import stores the result as a local
// snapshot that Restore can use.
//
// Publishing goes through the Gateway interface; this package does not
// import package arweave (nor open a store: the engine hands it an Env).
// internal/snapgw adapts the Arweave client to Gateway and owns the
// common tags.
package snapshot
