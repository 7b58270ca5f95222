package crypto

import (
	"fmt"
	"testing"
)

// BenchmarkOpenWith: what a replay pays per event body under each AEAD,
// key setup included (every event has a key of its own); one op is one
// body of the named plaintext size.
func BenchmarkOpenWith(b *testing.B) {
	for _, a := range []AEAD{AESGCM, ChaCha20Poly1305} {
		for _, n := range []int{200, 560, 2000} {
			b.Run(fmt.Sprintf("%s/%d", a, n), func(b *testing.B) {
				dek := make([]byte, KeySize)
				aad := make([]byte, 110)
				sealed, err := SealWith(a, nil, dek, aad, make([]byte, n))
				if err != nil {
					b.Fatal(err)
				}
				dst := make([]byte, 0, n)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := OpenWith(a, dst, dek, aad, sealed); err != nil {
						b.Fatal(err)
					}
				}
			})
			// What a replay worker pays: its Opener reuses one cipher value.
			b.Run(fmt.Sprintf("%s/%d/Opener", a, n), func(b *testing.B) {
				dek := make([]byte, KeySize)
				aad := make([]byte, 110)
				sealed, err := SealWith(a, nil, dek, aad, make([]byte, n))
				if err != nil {
					b.Fatal(err)
				}
				dst := make([]byte, 0, n)
				var o Opener
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := o.Open(a, dst, dek, aad, sealed); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
