package timelines

import "github.com/unlimitedcontext/ucl/projections"

// Chunk ids are stored as projections.IDKey since version 5: the key of
// the "chunks" bucket, the values of "time" and "parts", the tail of an
// order index value.

// ChunkKey is the key of chunk id in the "chunks" bucket, for tools and
// tests that inspect or damage the file on purpose.
func ChunkKey(id string) []byte { return projections.IDKey(id) }
