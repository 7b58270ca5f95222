package arweave

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/everFinance/goar/types"
)

// Arweave transaction data chunking. goar v1.6.3's chunker computes the
// rebalanced second-to-last chunk as floor(n/2) where the protocol (and
// arweave-js, and the node) use ceil(n/2): for data longer than 256 KiB
// whose size is odd with size mod 256 KiB below 32 KiB, goar's data_root
// differs from the node's and an inline post is rejected ("data_root is
// invalid"). This file carries the chunker and Merkle tree with that fixed;
// the tree and proofs are otherwise goar's (utils/merkle.go), so its
// GetChunk still builds /chunk bodies from the result.

const (
	maxChunkSize = 256 * 1024
	minChunkSize = 32 * 1024
)

func chunkBoundaries(n int) []types.Chunk {
	var out []types.Chunk
	cursor, rest := 0, n
	for rest >= maxChunkSize {
		size := maxChunkSize
		if next := rest - maxChunkSize; next > 0 && next < minChunkSize {
			size = (rest + 1) / 2 // ceil
		}
		out = append(out, types.Chunk{MinByteRange: cursor, MaxByteRange: cursor + size})
		cursor += size
		rest -= size
	}
	return append(out, types.Chunk{MinByteRange: cursor, MaxByteRange: cursor + rest})
}

func note(v int) []byte {
	b := make([]byte, 32)
	binary.BigEndian.PutUint64(b[24:], uint64(v))
	return b
}

func sha(parts ...[]byte) []byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// arweaveChunks returns data's chunks, proofs and data_root.
func arweaveChunks(data []byte) *types.Chunks {
	chunks := chunkBoundaries(len(data))
	nodes := make([]*types.Node, len(chunks))
	for i := range chunks {
		dh := sha(data[chunks[i].MinByteRange:chunks[i].MaxByteRange])
		chunks[i].DataHash = dh
		nodes[i] = &types.Node{
			ID:           sha(sha(dh), sha(note(chunks[i].MaxByteRange))),
			Type:         types.LeafNodeType,
			DataHash:     dh,
			MinByteRange: chunks[i].MinByteRange,
			MaxByteRange: chunks[i].MaxByteRange,
		}
	}
	for len(nodes) > 1 {
		next := make([]*types.Node, 0, (len(nodes)+1)/2)
		for i := 0; i < len(nodes); i += 2 {
			if i+1 == len(nodes) {
				next = append(next, nodes[i])
				continue
			}
			l, r := nodes[i], nodes[i+1]
			next = append(next, &types.Node{
				ID:           sha(sha(l.ID), sha(r.ID), sha(note(l.MaxByteRange))),
				Type:         types.BranchNodeType,
				MaxByteRange: r.MaxByteRange,
				ByteRange:    l.MaxByteRange,
				LeftChild:    l,
				RightChild:   r,
			})
		}
		nodes = next
	}
	root := nodes[0]
	var proofs []*types.Proof
	var walk func(n *types.Node, proof []byte)
	walk = func(n *types.Node, proof []byte) {
		if n.Type == types.LeafNodeType {
			proofs = append(proofs, &types.Proof{
				Offest: n.MaxByteRange - 1,
				Proof:  append(append(append([]byte{}, proof...), n.DataHash...), note(n.MaxByteRange)...),
			})
			return
		}
		p := append(append(append(append([]byte{}, proof...), n.LeftChild.ID...), n.RightChild.ID...), note(n.ByteRange)...)
		walk(n.LeftChild, p)
		walk(n.RightChild, p)
	}
	walk(root, nil)
	if last := chunks[len(chunks)-1]; last.MaxByteRange == last.MinByteRange {
		chunks, proofs = chunks[:len(chunks)-1], proofs[:len(proofs)-1]
	}
	return &types.Chunks{DataRoot: root.ID, Chunks: chunks, Proofs: proofs}
}
