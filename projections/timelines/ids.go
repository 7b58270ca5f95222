package timelines

import "github.com/unlimitedcontext/ucl/projections"

// Chunk ids are stored as projections.IDKey since version 5: the key of
// the "ids" bucket (since version 7; its value is the 8-byte seq that keys
// the chunk's record in "chunks"), the values of "time" and "parts", the
// tail of an order index value.

// ChunkKey is the key of chunk id in the "ids" bucket, for tools and
// tests that inspect or damage the file on purpose.
func ChunkKey(id string) []byte { return projections.IDKey(id) }
