package projstd

// The "vecs" bucket is keyed by projections.IDKey (format 4; format 5
// dropped the "chunks" bucket, whose records now follow the vectors):
// half the key bytes for the usual hex chunk ids, at one key per chunk.
// Key order is id order only within each stored form, so a reader that
// needs id order sorts what it decoded (see Apply's graph start).
