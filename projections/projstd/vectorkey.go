package projstd

// The "ids" bucket's keys, and the keys "slots" records name, are
// projections.IDKey's (format 4 keyed "vecs" so; format 7 keeps the form):
// half the key bytes for the usual hex chunk ids. Key order is id order
// only within each stored form, and records are stored in slot order, so
// a reader that needs id order sorts what it decoded (see Commit's graph
// start, and storedDigest).
