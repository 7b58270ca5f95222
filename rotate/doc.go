// Package rotate rotates a store's vault key to shred tombstoned content
// for good (the engine's RotateKeys, `ucl keys rotate`), crash safe
// through a journal, and finishes or rolls back a rotation a crash
// interrupted (Resume, from the engine's Open). It works on the Env the
// engine hands it: the log, the keyring, the metadata's key fingerprint,
// and the projections and embedding cache it closes and rebuilds.
//
// # Key rotation (shredding)
//
// Start makes vault-key epoch e+1, appends rekey events carrying the DEK
// of every event that is not tombstoned content rewrapped under e+1 (at
// least one rekey event per rotation, up to DefaultKeysPerEvent keys each
// unless asked otherwise), deletes the local state that could hold
// tombstoned content or depend on epoch e (the projections, rebuilt from
// the live log after the wipe; every local snapshot; the corrupt/
// directory's cut log bytes; the embedding cache keeps only the vectors of
// live chunks, copied into a new file), then removes epoch e from the
// keyring and DIR/vault.key. Reading an event of a wiped epoch looks its
// DEK up in the newest rekey event naming it (log.Rekeys); an event no
// rekey event names, of an epoch older than the newest rekey event's, was
// shredded by design: reads report log.ErrShredded, Replay and AuditLog
// mark it "shredded", and tombstones before the newest completed rotation
// (ShredCut) show erasure "shredded".
//
// # Journal
//
// The journal DIR/rotate.journal (JournalFile) exists only while a
// rotation runs (golden: testdata/rotate.journal.golden; decoder fuzzed):
//
//	off len field
//	  0   8 magic "UCLROT\x00\x01" (the last byte is the format version)
//	  8   1 phase: 1 begun, 2 keyed, 3 rekeyed, 4 cleaned
//	  9   4 from epoch uint32 LE (the epoch being shredded)
//	 13   4 to epoch   uint32 LE (from+1)
//	 17   8 the new key's fingerprint digest (the hex part of "EPOCH:hex")
//	 25   4 CRC-32C (Castagnoli) of bytes 0..24, LE
//
// Every write of it, of vault.key and of ucl.json is atomic (temp file,
// fsync, rename, fsync dir). The steps: journal phase 1; vault.key with
// both epochs (current e+1); ucl.json names the new key; journal phase 2;
// the keyring switches under the log's commit lock (every later event is
// wrapped under e+1); rekey events; phase 3; local state cleaned; phase 4;
// vault.key without epoch e; journal removed. Resume finishes an
// interrupted rotation: in phase 1 no event is wrapped under e+1 yet, so
// it rolls back (epoch e+1 dropped from vault.key, ucl.json names epoch e
// again, journal removed); from phase 2 on it finishes, writing only the
// rekey keys still missing. While the journal exists the store's keyring
// holds both epochs, so the store opens at every step.
//
// A replaced key file's bytes are overwritten after the new one is in
// place (SaveKeys), so the old keys do not linger in its freed blocks on
// file systems that write in place.
package rotate
