package vector

import "errors"

var (
	// ErrEmbedder is returned (wrapped) when an embedding backend fails: a
	// transport error, a non-2xx status, a malformed or mismatched response, a
	// timeout, or vectors of inconsistent dimension.
	ErrEmbedder = errors.New("vector: embedder failed")

	// ErrDimension is returned (wrapped) when a vector's length does not match
	// the dimension of the index or embedder.
	ErrDimension = errors.New("vector: wrong dimension")

	// ErrInvalidVector is returned (wrapped) when a vector holds NaN or ±Inf.
	ErrInvalidVector = errors.New("vector: invalid vector")

	// ErrInvalidID is returned when an id is empty or longer than MaxIDLen.
	ErrInvalidID = errors.New("vector: invalid id")

	// ErrInvalidK is returned when Search is called with k <= 0.
	ErrInvalidK = errors.New("vector: k must be positive")

	// ErrInvalidOptions is returned when a constructor gets options it cannot
	// honour (non-positive dimension, M < 2, unknown protocol, ...).
	ErrInvalidOptions = errors.New("vector: invalid options")

	// ErrCorrupt is returned (wrapped) by UnmarshalBinary when the input is
	// not a well-formed serialized index of the expected kind and version.
	ErrCorrupt = errors.New("vector: corrupt serialized index")

	// ErrStalePositions is returned by Exact.SearchPositions when the
	// index has added or deleted a vector since the positions were read
	// (Exact.Positions): they may name other vectors now.
	ErrStalePositions = errors.New("vector: positions read before the index changed")
)
