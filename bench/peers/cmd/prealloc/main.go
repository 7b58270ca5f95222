//go:build linux

// Command prealloc measures how the space ahead of an appended, fdatasynced
// file is best reserved on the disk at hand (issue 26, "bytes per fsync"):
// it appends -w bytes at a time to a fresh file, fdatasync after each
// write, under each strategy in turn, -rounds times alternated, and prints
// per strategy the median write+sync latency, the mean, the process CPU per
// write and the bytes the process sent to the disk per write
// (/proc/self/io write_bytes), each as median [min-max] over the rounds.
//
//	go run ./cmd/prealloc -dir /path/on/the/disk -w 175000 -n 300 -rounds 6
//
// Strategies:
//
//   - zeros: ucl's tail writer (log/segwrite.go): fallocate twice the write
//     ahead (64 KiB..1 MiB), then write zeros over it past the write;
//   - falloc: the same fallocate steps, no zeros (unwritten extents);
//   - keep: the same steps with FALLOC_FL_KEEP_SIZE (the file grows by
//     its writes);
//   - seg: etcd's WAL, the whole 64 MiB segment fallocated at creation;
//   - none: no preallocation, the file grows by its writes;
//   - zpre: the whole segment written with zeros and synced before the
//     timed writes (the floor of a zero fill done off the write path).
//
// Rounds, not writes interleaved across files: on ext4 one file's
// fdatasync commits the journal for all, so interleaved files share their
// metadata costs and look alike.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const segSize = 64 << 20

var zero [1 << 20]byte

func main() {
	dir := flag.String("dir", "", "directory on the disk to measure (default: a temp dir)")
	n := flag.Int("n", 300, "writes a round")
	w := flag.Int("w", 175000, "bytes a write (175000: a batch of 256 events of 512-byte contents)")
	rounds := flag.Int("rounds", 6, "rounds, strategies alternated in each")
	list := flag.String("s", "zeros,falloc,keep,seg,none,zpre", "strategies")
	flag.Parse()
	if *dir == "" {
		d, err := os.MkdirTemp("", "prealloc-*")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	ss := strings.Split(*list, ",")
	type agg struct{ p50, mean, cpu, bytes []float64 }
	all := map[string]*agg{}
	for r := 0; r < *rounds; r++ {
		for _, s := range ss {
			x, err := run(filepath.Join(*dir, "prealloc-"+s), s, *n, *w)
			if err != nil {
				fail(err)
			}
			a := all[s]
			if a == nil {
				a = &agg{}
				all[s] = a
			}
			a.p50, a.mean = append(a.p50, x.p50), append(a.mean, x.mean)
			a.cpu, a.bytes = append(a.cpu, x.cpu), append(a.bytes, x.bytes)
		}
	}
	fmt.Printf("%d writes of %d bytes, each fdatasynced, %d rounds\n", *n, *w, *rounds)
	for _, s := range ss {
		a := all[s]
		fmt.Printf("%-7s p50 %s µs  mean %s µs  cpu/write %s µs  disk bytes/write %s\n", s, mm(a.p50), mm(a.mean), mm(a.cpu), mm(a.bytes))
	}
}

type result struct{ p50, mean, cpu, bytes float64 }

func run(path, strat string, n, w int) (result, error) {
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return result{}, err
	}
	defer os.Remove(path)
	defer f.Close()
	fd := int(f.Fd())
	size, alloc := 0, 0
	switch strat {
	case "seg", "zpre":
		if err := syscall.Fallocate(fd, 0, 0, segSize); err != nil {
			return result{}, fmt.Errorf("fallocate: %w", err)
		}
		alloc = segSize
		if strat == "zpre" {
			if err := zeros(f, 0, segSize); err != nil {
				return result{}, err
			}
			if err := syscall.Fdatasync(fd); err != nil {
				return result{}, fmt.Errorf("fdatasync: %w", err)
			}
		}
	case "zeros", "falloc", "keep", "none":
	default:
		return result{}, fmt.Errorf("unknown strategy %q", strat)
	}
	buf := make([]byte, w)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	lat := make([]time.Duration, 0, n)
	c0, b0, t0 := cpuTime(), writeBytes(), time.Now()
	for i := 0; i < n; i++ {
		s := time.Now()
		if need := size + w; need > alloc && strat != "none" && strat != "seg" && strat != "zpre" {
			to := need + min(max(2*w, 64<<10), 1<<20)
			mode := uint32(0)
			if strat == "keep" {
				mode = 1 // FALLOC_FL_KEEP_SIZE
			}
			if err := syscall.Fallocate(fd, mode, int64(alloc), int64(to-alloc)); err != nil {
				return result{}, fmt.Errorf("fallocate: %w", err)
			}
			if strat == "zeros" {
				if err := zeros(f, need, to-need); err != nil {
					return result{}, err
				}
			}
			alloc = to
		}
		if _, err := f.WriteAt(buf, int64(size)); err != nil {
			return result{}, err
		}
		size += w
		alloc = max(alloc, size)
		if err := syscall.Fdatasync(fd); err != nil {
			return result{}, fmt.Errorf("fdatasync: %w", err)
		}
		lat = append(lat, time.Since(s))
	}
	el := time.Since(t0)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return result{
		p50:   float64(lat[len(lat)/2].Microseconds()),
		mean:  float64(el.Microseconds()) / float64(n),
		cpu:   float64((cpuTime() - c0).Microseconds()) / float64(n),
		bytes: float64(writeBytes()-b0) / float64(n),
	}, nil
}

func zeros(f *os.File, off, n int) error {
	for n > 0 {
		k := min(n, len(zero))
		if _, err := f.WriteAt(zero[:k], int64(off)); err != nil {
			return fmt.Errorf("write zeros: %w", err)
		}
		off, n = off+k, n-k
	}
	return nil
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeBytes is the bytes this process caused to be sent to storage
// (/proc/self/io), 0 where that is not available.
func writeBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		var v int64
		if k, _ := fmt.Sscanf(l, "write_bytes: %d", &v); k == 1 {
			return v
		}
	}
	return 0
}

func mm(x []float64) string {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return fmt.Sprintf("%.0f [%.0f-%.0f]", s[len(s)/2], s[0], s[len(s)-1])
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "prealloc:", err)
	os.Exit(1)
}
