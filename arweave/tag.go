package arweave

import (
	"errors"

	"github.com/everFinance/goar/types"
)

// Tag is one Arweave tag (plain strings, not base64).
type Tag = types.Tag

// MaxTagBytes is Arweave's limit on the total size of tag names and values.
const MaxTagBytes = 2048

// TagBytes returns the byte count Arweave charges against MaxTagBytes.
func TagBytes(tags []Tag) int {
	n := 0
	for _, t := range tags {
		n += len(t.Name) + len(t.Value)
	}
	return n
}

// ErrTags is returned when an upload's tags are missing, malformed or
// disagree with its contents, or exceed MaxTagBytes.
var ErrTags = errors.New("arweave: bad ucl tags")
