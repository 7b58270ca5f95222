package projstd

// The "chunks" and "vecs" buckets are keyed by projections.IDKey (format
// 4): half the key bytes for the usual hex chunk ids, which matter at one
// key per chunk in two buckets. Key order is id order only within each
// stored form, so a reader that needs id order sorts what it decoded (see
// Apply's graph start).
