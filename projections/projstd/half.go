package projstd

import (
	"math"
	"sync"
)

// Vectors are stored as IEEE 754 half-precision values (binary16) after
// normalisation to unit length: 2 bytes a dimension instead of 4. A unit
// vector's components lie in [-1, 1], where binary16 keeps 11 significant
// bits (relative error ≤ 2^-11), far below what moves a cosine ranking;
// the in-memory indexes hold exactly the stored values, so the digest and
// every search are the same whichever path built the projection.

// toHalf rounds f to the nearest binary16 (ties to even).
func toHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if b&0x7fffffff >= 0x7f800000 { // Inf or NaN
		if b&0x7fffff != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp >= 31:
		return sign | 0x7c00 // overflow: Inf
	case exp <= 0: // subnormal in binary16
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := uint16(mant >> shift)
		rem, halfway := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > halfway || (rem == halfway && h&1 == 1) {
			h++
		}
		return sign | h
	}
	h := uint16(exp)<<10 | uint16(mant>>13)
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the right rounding
	}
	return sign | h
}

// halves maps every binary16 value to its float32 (256 KiB, built on
// first use): decoding a stored vector is then one load per dimension.
var halves = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = widenHalf(uint16(i))
	}
	return &t
})

// fromHalf widens a binary16 value to float32 (exactly).
func fromHalf(h uint16) float32 { return halves()[h] }

func widenHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		f := float32(mant) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	case 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}

// quantize returns v scaled to unit length and rounded to binary16, as
// float32 values: what is stored and indexed. A zero vector stays zero.
func quantize(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if ss == 0 {
		return out
	}
	norm := math.Sqrt(ss)
	for i, x := range v {
		out[i] = fromHalf(toHalf(float32(float64(x) / norm)))
	}
	return out
}
