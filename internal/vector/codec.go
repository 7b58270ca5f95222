package vector

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// encoder appends little-endian fields to a buffer.
type encoder struct{ b []byte }

func (e *encoder) u8(x uint8)   { e.b = append(e.b, x) }
func (e *encoder) u16(x uint16) { e.b = binary.LittleEndian.AppendUint16(e.b, x) }
func (e *encoder) u32(x uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, x) }
func (e *encoder) uvarint(x uint64) {
	e.b = binary.AppendUvarint(e.b, x)
}
func (e *encoder) str(s string) { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) vec(v []float32) {
	for _, x := range v {
		e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(x))
	}
}

// seal appends the SHA-256 trailer over everything written so far.
func (e *encoder) seal() []byte {
	sum := sha256.Sum256(e.b)
	return append(e.b, sum[:]...)
}

// decoder reads fields; the first failure sticks in err.
type decoder struct {
	b   []byte
	err error
}

// open checks magic, version and trailer and returns a decoder over the body.
func openSealed(data []byte, magic string, version uint16) (*decoder, error) {
	if len(data) < len(magic)+2+sha256.Size {
		return nil, fmt.Errorf("decode index: %d bytes is too short: %w", len(data), ErrCorrupt)
	}
	if !bytes.Equal(data[:len(magic)], []byte(magic)) {
		return nil, fmt.Errorf("decode index: bad magic %q, want %q: %w", data[:len(magic)], magic, ErrCorrupt)
	}
	body, trailer := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if v := binary.LittleEndian.Uint16(data[len(magic):]); v != version {
		return nil, fmt.Errorf("decode index: unsupported version %d, want %d: %w", v, version, ErrCorrupt)
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], trailer) {
		return nil, fmt.Errorf("decode index: checksum mismatch: %w", ErrCorrupt)
	}
	return &decoder{b: body[len(magic)+2:]}, nil
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("decode index: truncated or bad %s: %w", what, ErrCorrupt)
	}
}

func (d *decoder) u8(what string) uint8 {
	if d.err != nil || len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return x
}

func (d *decoder) u16(what string) uint16 {
	if d.err != nil || len(d.b) < 2 {
		d.fail(what)
		return 0
	}
	x := binary.LittleEndian.Uint16(d.b)
	d.b = d.b[2:]
	return x
}

func (d *decoder) u32(what string) uint32 {
	if d.err != nil || len(d.b) < 4 {
		d.fail(what)
		return 0
	}
	x := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return x
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) str(what string) string {
	n := d.uvarint(what)
	if d.err != nil || n > uint64(len(d.b)) || n > MaxIDLen {
		d.fail(what)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// vec reads dim float32 values into dst and checks they are finite.
func (d *decoder) vec(dst []float32) {
	if d.err != nil || len(d.b) < 4*len(dst) {
		d.fail("vector")
		return
	}
	for i := range dst {
		x := math.Float32frombits(binary.LittleEndian.Uint32(d.b[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			d.fail("vector value")
			return
		}
		dst[i] = x
	}
	d.b = d.b[4*len(dst):]
}

func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("decode index: %d trailing bytes: %w", len(d.b), ErrCorrupt)
	}
	return d.err
}

// checkStoredVector accepts a decoded vector if it is zero or has unit norm
// (within float32 rounding), which is all Add ever stores.
func checkStoredVector(v []float32) bool {
	var ss float64
	for _, x := range v {
		ss += float64(float64(x) * float64(x))
	}
	return ss == 0 || math.Abs(ss-1) < 1e-3
}
