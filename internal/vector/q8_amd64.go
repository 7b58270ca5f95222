//go:build amd64 && !purego

package vector

import "golang.org/x/sys/cpu"

var useAVX2 = cpu.X86.HasAVX2

// dotQ8AVX2 returns Σ q[i]·v[i] for n a positive multiple of 16, n ≤
// q8AsmMaxDim.
//
//go:noescape
func dotQ8AVX2(q *int16, v *int8, n int) int64

func dotQ8Blocks(q []int16, v []int8) int64 {
	if useAVX2 {
		return dotQ8AVX2(&q[0], &v[0], len(q))
	}
	return dotQ8Generic(q, v)
}
