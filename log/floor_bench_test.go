package log

import (
	"hash/crc32"
	"testing"
	"time"
)

// BenchmarkReplayFloor measures, on the entries BenchmarkReplay reads (100K
// stores of 512-byte contents), the cost an event of each step a replay
// with verify and decrypt cannot skip, one at a time on one goroutine:
// the entry's CRC, its data key (derived from the batch key), the
// ChaCha20-Poly1305 open of its body (under its format's AAD), and the
// SHA-256 of header and body the hash chain is made of (by its format's
// rule: HashRaw); all is the four in a row. Run beside
// BenchmarkReplay in the same process, cpu-us/event of all against
// Replay's is the share of a replay that is this floor, and Replay's
// minus all what the rest (read, parse, decode, the event's allocation,
// the pipeline) costs; on a shared machine both are loaded alike.
func BenchmarkReplayFloor(b *testing.B) {
	const n = 100_000
	l, dir, kr := benchReplayLog(b, n)
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	raws := make([][]byte, 0, n)
	if err := scanFiles(dir, 0, 0, func(_ uint64, raw []byte) error {
		raws = append(raws, append([]byte(nil), raw...))
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	hs := make([]Header, len(raws))
	for i, raw := range raws {
		h, err := DecodeHeader(raw)
		if err != nil {
			b.Fatal(err)
		}
		hs[i] = h
	}
	var st decState
	dek := func(i int) [32]byte {
		k, err := dataKey(kr, &hs[i], nil, &st.batch)
		if err != nil {
			b.Fatal(err)
		}
		return k
	}
	var sink uint32
	buf := make([]byte, 0, 4096)
	open := func(i int) {
		k := dek(i)
		raw := raws[i]
		p, err := st.open.Open(hs[i].Cipher(), buf[:0], k[:], sealAAD(raw, &st.aad), raw[HeaderSize:])
		if err != nil {
			b.Fatal(err)
		}
		sink += uint32(len(p))
	}
	steps := []struct {
		name string
		f    func(i int)
	}{
		{"crc", func(i int) { sink += crc32.Checksum(raws[i], castagnoli) }},
		{"key", func(i int) { k := dek(i); sink += uint32(k[0]) }},
		{"open", open}, // key and open: the key alone is "key"
		{"sha256", func(i int) { h := HashRaw(raws[i]); sink += uint32(h[0]) }}, // by the rule of the entry's format
		{"all", func(i int) {
			sink += crc32.Checksum(raws[i], castagnoli)
			open(i)
			h := HashRaw(raws[i])
			sink += uint32(h[0])
		}},
	}
	for _, s := range steps {
		b.Run(s.name, func(b *testing.B) {
			start, cpu0 := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				s.f(i % len(raws))
			}
			el := time.Since(start)
			b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1000/float64(b.N), "cpu-us/event")
		})
	}
	_ = sink
}
