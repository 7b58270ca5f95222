// Package cluster runs ucl stores on several machines over NATS JetStream
// (DESIGN.md §14): each store has one owner node at a time, every
// acknowledged append is also in a replicated stream, and any node can
// take a store over from that stream when its owner dies. The
// single-machine path does not use this package.
//
// # Subjects and streams
//
//	UCL.<log id>          the store's events, one message per event, the
//	                      message data being the sealed event exactly as
//	                      log.Log.Raw returns it (header, ciphertext; no
//	                      CRC). Stream "UCL_<log id>" holds only this
//	                      subject, file storage, Config.Replicas replicas,
//	                      no limits: stream sequence N is log seq N.
//	ucl.req.<store name>  requests for the store's owner (queue group
//	                      "owner"): header Ucl-Path is the socket route
//	                      (/v1/{method}, see ucl.Handler), the data its JSON
//	                      request body; the reply carries header
//	                      Ucl-Status (the HTTP status ucl.Handler gave) and
//	                      the response body. Any node forwards a request
//	                      this way (Node.Client): the method table decides
//	                      everything, nothing here knows a method.
//
// # KV bucket "ucl-owners"
//
//	key <store name>      value: the owner's node id. The bucket's TTL is
//	                      Config.LeaseTTL: a lease not renewed within it
//	                      expires. Taking a lease is a Create (fails while
//	                      another node holds it); renewing is an Update
//	                      with the revision the owner last wrote (fails if
//	                      anyone else wrote the key since).
//
// An owner renews its lease every quarter TTL from the moment it takes it
// (a takeover importing a long stream may outlast the TTL). It serves the
// store only while valid (Owned.Valid): renewed within half the TTL
// (counted from when the renewal was sent), not lost to another node, and
// no append failed to replicate; it publishes, and retries a publish,
// only while valid (Node.PublishWhile); a server
// drops an owner that is not valid and opens the store anew. Every node
// watches the bucket (WatchLeases): a key not written for a whole TTL
// belongs to an owner that stopped, and the node takes that store over at
// once if it has the store's directory. A key deleted (an owner closing
// the store) is not a reason to take it.
//
// # KV bucket "ucl-stores" (provisioning)
//
//	store.<name>          the store's identity files sealed under the
//	                      cluster key: AES-256-GCM, value = nonce (12) ‖
//	                      ciphertext, associated data
//	                      "ucl-store-identity-v1" 0x00 <name>; plaintext a
//	                      JSON object {file name: base64 bytes} of
//	                      ucl.json, vault.key, wallet.json and token.sha256
//	token.<sha256 hex>    value: the store name its token opens
//
// The cluster key (32 bytes, a file of 64 hex digits) is the same on
// every node. A node that gets a token no local store has fetches
// token.<hash>, then store.<name>, checks that the token hash inside is
// the one asked for, and writes the files into DIR/<name> (staged, then
// renamed). A name already published with other files is refused, never
// overwritten. Whoever holds the key and can read the bucket holds every
// store's vault key: treat it as such.
//
// # Object store "ucl-snapshots"
//
//	<log id>/manifest        the manifest.json of the log's newest
//	                         snapshot (snapshot package doc)
//	<log id>/archive/<name>  its archive.bin, <name> being the manifest's
//	                         name
//
// The owner snapshots a store's projections (snapshot.Create at the log
// head) every Config.SnapshotEvery events and puts the archive, then the
// manifest, then deletes the archive the old manifest named. A snapshot
// that fails is tried again after a pause (0.5 s doubling to 30 s) for as
// long as one is due. Replicas as Config.Replicas.
//
// # The ack rule
//
// An append is acknowledged when its events are in the owner's local WAL
// (fsynced as the store's durability says) and in the store's stream:
// each event is published with ExpectLastSequence(seq-1), so the stream
// takes event N only directly after event N-1 and a second writer (a
// former owner that missed its lease's expiry) is refused instead of
// forking the chain. A publish that fails fails the append with
// log.ErrNotReplicated and the store takes no more appends until it is
// opened again: a node cut off from NATS refuses writes. Such an owner
// stops renewing its lease and deletes its key (Owned.giveUp): another
// node takes the store over from the stream, where renewing would keep
// every other node forwarding to an owner that can only say "try again".
//
// Between the WAL write and the stream's ack a crash leaves events in the
// local WAL that were never acknowledged. When the node owns the store
// again, Reconcile publishes them if the stream still ends where the local
// log left it; if another owner has extended the stream meanwhile the
// local log has forked from it (ErrForked): Own cuts the local log back to
// the newest event it shares with the stream (log.CutAfter, the cut bytes
// kept in DIR/NAME/corrupt as ucl audit repair keeps them) and imports the
// stream's events instead. Cutting is safe because an acknowledged event
// is in the stream at its seq: an event that differs from the stream's was
// never acknowledged, nor was any after it. An append that failed with
// ErrNotReplicated has an unknown outcome: its event may be published
// later by this reconcile, or cut.
//
// A publish that gets no answer (no responders, a timeout: the stream's
// RAFT group is electing a leader, 4 to 9 s in nats-server after a server
// dies) is tried again for up to twice Config.Timeout before it fails;
// so are the stream information requests of a takeover (EnsureStream,
// StreamHead), which meet the same election.
//
// # Takeover
//
// Own takes the lease, makes sure the stream exists, reads the stream
// from the local log's head on into the local log with log.Log.Import
// (which verifies every event's seq, prev hash and seal, as rebuild does
// for Arweave segments; one ordered consumer streams the events, imported
// in batches of 1024), then opens the store with the publish hook and
// answers its request subject. When the local log was empty, the
// projections are restored from the object store's snapshot (its archive
// checked against the manifest, the manifest's head hash against the
// imported log) and only the events after it are replayed; the log
// itself is always imported whole, as rebuild does from Arweave, since it
// is the source of truth. The store's directory must already hold its
// identity (ucl.json, vault key, wallet): copied by hand, or fetched from
// "ucl-stores" with the cluster key; only the log travels through the
// stream.
//
// # Arweave
//
// Arweave mirroring stays with the owner, and goes no further than the
// stream: Own sets ucl.Options.MirrorHead to the last seq the stream
// acknowledged (its head after the reconcile, then each replicated
// commit's last seq), so a push never uploads an event that a later
// takeover may cut. A new owner's push adopts the segments already on
// Arweave that agree with its imported log and continues that chain.
package cluster
