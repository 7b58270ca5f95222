package log

import (
	"io"
	"os"
	"path/filepath"
	"sync"
)

// segTails remembers where the verified entries of recently read segment
// files start, so that a read from the middle of a long segment (a
// catch-up of the few events one request appended) reads and checks the
// bytes from its first event on instead of the whole file. Only entries
// this process has already read with a good CRC are remembered; anything
// unusual (another file at the path, a shorter file, a bad or torn entry
// in the part read) falls back to reading the whole file, so errors are
// reported exactly as before.
var segTails = struct {
	sync.Mutex
	m map[string]*segOffsets
}{m: map[string]*segOffsets{}}

// segTailFiles bounds the number of segment files remembered.
const segTailFiles = 8

type segOffsets struct {
	fi   os.FileInfo
	offs []int64 // offs[k] is where entry k starts
	end  int64   // end of the last remembered entry
}

// rememberEntries records the entries of a whole-file parse of path.
func rememberEntries(path string, ents []fileEntry, st tailState) {
	if st.err != nil || st.torn {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	so := &segOffsets{fi: fi, offs: make([]int64, len(ents)), end: st.goodEnd}
	for i, e := range ents {
		so.offs[i] = e.off
	}
	segTails.Lock()
	defer segTails.Unlock()
	if len(segTails.m) >= segTailFiles {
		clear(segTails.m)
	}
	segTails.m[path] = so
}

// tailEntries parses the entries of path from entry k on, when the
// offset of entry k is known and the rest parses cleanly; ok false means
// the caller reads the whole file.
func tailEntries(path string, k uint64) (ents []fileEntry, st tailState, ok bool) {
	segTails.Lock()
	so := segTails.m[path]
	var off int64
	if so != nil && k <= uint64(len(so.offs)) {
		off = so.end
		if k < uint64(len(so.offs)) {
			off = so.offs[k]
		}
	} else {
		so = nil
	}
	segTails.Unlock()
	if so == nil {
		return nil, st, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, st, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !os.SameFile(fi, so.fi) || fi.Size() < so.end {
		return nil, st, false
	}
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return nil, st, false
	}
	ents, st = parseSegment(b)
	if st.err != nil || st.torn {
		return nil, st, false
	}
	for i := range ents {
		ents[i].off += off
		ents[i].end += off
	}
	st.goodEnd += off
	segTails.Lock()
	defer segTails.Unlock()
	if cur := segTails.m[path]; cur == so {
		// Extend what is remembered with the entries just checked.
		for i, e := range ents {
			if idx := k + uint64(i); idx == uint64(len(so.offs)) {
				so.offs = append(so.offs, e.off)
				so.end = e.end
			}
		}
	}
	return ents, st, true
}

// forgetSegments drops what is remembered of the segments in dir: called
// before files are cut or rewritten.
func forgetSegments(dir string) {
	segTails.Lock()
	defer segTails.Unlock()
	for path := range segTails.m {
		if filepath.Dir(path) == filepath.Clean(dir) {
			delete(segTails.m, path)
		}
	}
}
