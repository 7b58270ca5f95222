//go:build amd64 && !purego

#include "textflag.h"

// func dotAVX(a, b *float32, n int) float32
// Y0 holds lanes s[0..7], Y1 lanes s[8..15]; see dot in vecmath.go for the
// exact evaluation order this must reproduce (no FMA).
TEXT ·dotAVX(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

loop:
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VMULPS (DI), Y2, Y2
	VMULPS 32(DI), Y3, Y3
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ loop

	// t[j] = s[j] + s[j+8]
	VADDPS Y1, Y0, Y0
	// u[j] = t[j] + t[j+4]
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	// v[j] = u[j] + u[j+2]
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	// r = v[0] + v[1]
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func prefetch(p *float32, n int)
// Issues PREFETCHT0 for every 64-byte line of n float32 values at p.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHLQ $2, CX
	ADDQ SI, CX

ploop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JB ploop
	RET
