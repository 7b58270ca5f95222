//go:build amd64 && !purego

package vector

import "golang.org/x/sys/cpu"

var useAVX = cpu.X86.HasAVX

// dotAVX computes the 16-lane block sum of dot with two 8-wide AVX
// accumulators (lanes 0-7 and 8-15); n is a positive multiple of 16.
//
//go:noescape
func dotAVX(a, b *float32, n int) float32

func dotBlocks(a, b []float32) float32 {
	if useAVX {
		return dotAVX(&a[0], &b[0], len(a))
	}
	return dotGeneric16(a, b)
}

// prefetch hints the CPU to load the n float32 values at p (n > 0). It is
// only a hint: it never faults and never changes results.
//
//go:noescape
func prefetch(p *float32, n int)
