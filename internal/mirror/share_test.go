package mirror

import (
	"bytes"
	"errors"
	"testing"
)

func testDisclosure() *Disclosure {
	d := &Disclosure{Grant: [16]byte{1, 2, 3}, ShareKey: bytes.Repeat([]byte{7}, 512)}
	for i, seq := range []uint64{5, 9, 12} {
		k := DisclosedKey{Seq: seq}
		k.Wrapped[0] = byte(i + 1)
		d.Keys = append(d.Keys, k)
	}
	return d
}

func TestDisclosureRoundTrip(t *testing.T) {
	d := testDisclosure()
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDisclosure(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := got.Encode()
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("re-encoding differs: %v", err)
	}
}

func TestDisclosureRejects(t *testing.T) {
	good, err := testDisclosure().Encode()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"empty":          nil,
		"version":        append([]byte{2}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(append([]byte(nil), good...), 0),
		"short key list": good[:1+16+3+512],
	}
	unsorted := testDisclosure()
	unsorted.Keys[1].Seq = 4
	if _, err := unsorted.Encode(); !errors.Is(err, ErrDisclosure) {
		t.Fatalf("encoding unsorted keys: %v", err)
	}
	// Hand-build the unsorted bytes: keys 5, 4.
	b := append([]byte(nil), good...)
	off := len(b) - 2*48 // the second key's seq
	b[off-48], b[off] = 5, 4
	cases["unsorted"] = b
	for name, b := range cases {
		if _, err := DecodeDisclosure(b); !errors.Is(err, ErrDisclosure) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := (&Disclosure{ShareKey: []byte{1}}).Encode(); !errors.Is(err, ErrDisclosure) {
		t.Errorf("no keys: %v", err)
	}
}

func FuzzDecodeDisclosure(f *testing.F) {
	good, err := testDisclosure().Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDisclosure(b)
		if err != nil {
			return
		}
		again, err := d.Encode()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("decoded disclosure does not re-encode to its bytes: %v", err)
		}
	})
}
