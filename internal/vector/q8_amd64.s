//go:build amd64 && !purego

#include "textflag.h"

// func dotQ8AVX2(q *int16, v *int8, n int) int64
// Sign-extends 16 codes of v to int16 and multiplies them by 16 of q
// pairwise into 8 int32 sums (VPMADDWD); two accumulators; the 8 lanes
// are widened to int64 before the final sum. Integer arithmetic: the
// result is exact, the same as dotQ8Generic.
TEXT ·dotQ8AVX2(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	CMPQ CX, $32
	JB   tail

loop:
	VPMOVSXBW (DI), Y2
	VPMOVSXBW 16(DI), Y3
	VPMADDWD  (SI), Y2, Y2
	VPMADDWD  32(SI), Y3, Y3
	VPADDD    Y2, Y0, Y0
	VPADDD    Y3, Y1, Y1
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	CMPQ      CX, $32
	JAE       loop

tail:
	CMPQ      CX, $16
	JB        done
	VPMOVSXBW (DI), Y2
	VPMADDWD  (SI), Y2, Y2
	VPADDD    Y2, Y0, Y0

done:
	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMOVSXDQ    X0, Y2
	VPMOVSXDQ    X1, Y3
	VPADDQ       Y3, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPADDQ       X3, X2, X2
	VPSHUFD      $0x4e, X2, X3
	VPADDQ       X3, X2, X2
	MOVQ         X2, AX
	VZEROUPPER
	MOVQ         AX, ret+24(FP)
	RET
