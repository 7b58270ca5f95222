package snapshot

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// Wire constants of archive.bin and its plaintext. Do not change.
const (
	archiveMagic = "UCLSNAP1"
	treeMagic    = "UCLSNAR1"
	kindDir      = 'd'
	kindFile     = 'f'
	kindEnd      = 'e'
	maxPath      = 4096
)

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != crypto.KeySize {
		return nil, fmt.Errorf("new cipher: key is %d bytes", len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("new cipher: %w", err)
	}
	return cipher.NewGCM(b)
}

func frameNonce(i uint64, last bool) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n, i)
	if last {
		n[11] = 1
	}
	return n
}

// frameWriter encrypts a stream into archive frames. A full buffer is
// sealed only when more data arrives, so Close can mark the true last
// frame.
type frameWriter struct {
	w     io.Writer
	aead  cipher.AEAD
	aad   []byte
	size  int
	buf   []byte
	out   []byte
	n     uint64 // frames written
	plain int64
	err   error
}

func newFrameWriter(w io.Writer, key, aad []byte, frameSize int) (*frameWriter, error) {
	if frameSize <= 0 || frameSize > MaxFrameSize {
		return nil, fmt.Errorf("new archive writer: frame size %d out of range", frameSize)
	}
	a, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	hdr := append([]byte(archiveMagic), binary.BigEndian.AppendUint32(nil, uint32(frameSize))...)
	if _, err := w.Write(hdr); err != nil {
		return nil, fmt.Errorf("write archive header: %w", err)
	}
	return &frameWriter{w: w, aead: a, aad: aad, size: frameSize, buf: make([]byte, 0, frameSize)}, nil
}

func (fw *frameWriter) seal(last bool) error {
	fw.out = binary.BigEndian.AppendUint32(fw.out[:0], uint32(len(fw.buf)+crypto.TagSize))
	fw.out = fw.aead.Seal(fw.out, frameNonce(fw.n, last), fw.buf, fw.aad)
	if _, err := fw.w.Write(fw.out); err != nil {
		return fmt.Errorf("write frame %d: %w", fw.n, err)
	}
	fw.n++
	fw.buf = fw.buf[:0]
	return nil
}

func (fw *frameWriter) Write(p []byte) (int, error) {
	if fw.err != nil {
		return 0, fw.err
	}
	n := 0
	for len(p) > 0 {
		if len(fw.buf) == fw.size {
			if fw.err = fw.seal(false); fw.err != nil {
				return n, fw.err
			}
		}
		k := copy(fw.buf[len(fw.buf):fw.size], p)
		fw.buf = fw.buf[:len(fw.buf)+k]
		p = p[k:]
		n += k
		fw.plain += int64(k)
	}
	return n, nil
}

// Close seals the last frame (possibly empty). It does not close w.
func (fw *frameWriter) Close() error {
	if fw.err != nil {
		return fw.err
	}
	fw.err = fw.seal(true)
	if fw.err == nil {
		fw.err = errors.New("archive writer closed")
		return nil
	}
	return fw.err
}

// frameReader decrypts archive frames. A frame is the last one exactly
// when the input ends after it; authentication then proves the writer
// marked it last, so truncation at a frame boundary and appended bytes
// both fail.
type frameReader struct {
	r     *bufio.Reader
	aead  cipher.AEAD
	aad   []byte
	size  int
	n     uint64
	frame []byte
	plain []byte // undelivered plaintext of the current frame
	done  bool
	err   error
}

func newFrameReader(r io.Reader, key, aad []byte) (*frameReader, error) {
	a, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	hdr := make([]byte, len(archiveMagic)+4)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("read archive header: %w: %v", ErrCorrupt, err)
	}
	if string(hdr[:len(archiveMagic)]) != archiveMagic {
		return nil, fmt.Errorf("read archive header: %w: bad magic %q", ErrCorrupt, hdr[:len(archiveMagic)])
	}
	size := int(binary.BigEndian.Uint32(hdr[len(archiveMagic):]))
	if size <= 0 || size > MaxFrameSize {
		return nil, fmt.Errorf("read archive header: %w: frame size %d", ErrCorrupt, size)
	}
	return &frameReader{r: br, aead: a, aad: aad, size: size}, nil
}

func (fr *frameReader) next() error {
	var lb [4]byte
	if _, err := io.ReadFull(fr.r, lb[:]); err != nil {
		return fmt.Errorf("read frame %d: %w: truncated before the last frame", fr.n, ErrCorrupt)
	}
	l := int(binary.BigEndian.Uint32(lb[:]))
	if l < crypto.TagSize || l > fr.size+crypto.TagSize {
		return fmt.Errorf("read frame %d: %w: length %d", fr.n, ErrCorrupt, l)
	}
	if cap(fr.frame) < l {
		fr.frame = make([]byte, l, fr.size+crypto.TagSize)
	}
	fr.frame = fr.frame[:l]
	if _, err := io.ReadFull(fr.r, fr.frame); err != nil {
		return fmt.Errorf("read frame %d: %w: truncated", fr.n, ErrCorrupt)
	}
	_, perr := fr.r.Peek(1)
	last := errors.Is(perr, io.EOF)
	if perr != nil && !last {
		return fmt.Errorf("read frame %d: %w", fr.n, perr)
	}
	p, err := fr.aead.Open(fr.frame[:0], frameNonce(fr.n, last), fr.frame, fr.aad)
	if err != nil {
		return fmt.Errorf("decrypt frame %d: %w: authentication failed (tampered, truncated, or another snapshot's bytes)", fr.n, ErrCorrupt)
	}
	if !last && len(p) != fr.size {
		return fmt.Errorf("decrypt frame %d: %w: short inner frame", fr.n, ErrCorrupt)
	}
	fr.n++
	fr.plain = p
	fr.done = last
	return nil
}

func (fr *frameReader) Read(p []byte) (int, error) {
	for len(fr.plain) == 0 {
		if fr.err != nil {
			return 0, fr.err
		}
		if fr.done {
			return 0, io.EOF
		}
		if fr.err = fr.next(); fr.err != nil {
			return 0, fr.err
		}
	}
	n := copy(p, fr.plain)
	fr.plain = fr.plain[n:]
	return n, nil
}

// writeTree writes every directory and regular file under root (not root
// itself) in WalkDir's lexical order.
func writeTree(w io.Writer, root string) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.WriteString(treeMagic); err != nil {
		return err
	}
	var hdr []byte
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr = hdr[:0]
		switch {
		case d.IsDir():
			hdr = append(hdr, kindDir)
		case info.Mode().IsRegular():
			hdr = append(hdr, kindFile)
		default:
			return fmt.Errorf("archive %s: not a regular file or directory", rel)
		}
		hdr = binary.AppendUvarint(hdr, uint64(len(rel)))
		hdr = append(hdr, rel...)
		hdr = binary.AppendUvarint(hdr, uint64(info.Mode().Perm()))
		if d.IsDir() {
			_, err = bw.Write(hdr)
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		hdr = binary.AppendUvarint(hdr, uint64(fi.Size()))
		if _, err := bw.Write(hdr); err != nil {
			return err
		}
		n, err := io.Copy(bw, io.LimitReader(f, fi.Size()))
		if err != nil {
			return fmt.Errorf("archive %s: %w", rel, err)
		}
		if n != fi.Size() {
			return fmt.Errorf("archive %s: file changed while archiving", rel)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("archive projections: %w", err)
	}
	if err := bw.WriteByte(kindEnd); err != nil {
		return err
	}
	return bw.Flush()
}

// treeEntry is one decoded archive entry.
type treeEntry struct {
	Dir  bool
	Path string // slash-separated, relative, clean
	Mode fs.FileMode
	Size int64
}

// readTree decodes the plaintext of an archive, calling fn for every entry;
// for files, body yields exactly Size bytes and fn must consume them (or
// return an error). It checks paths are relative and clean, declared once,
// with their parent directory declared before them, and that nothing
// follows the end marker.
func readTree(r io.Reader, fn func(e treeEntry, body io.Reader) error) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	corrupt := func(format string, a ...any) error {
		return fmt.Errorf("decode archive: %w: %s", ErrCorrupt, fmt.Sprintf(format, a...))
	}
	// short reports a read that failed: the frame reader's own error when
	// it has one (authentication, cancellation), else a truncation.
	short := func(what string, err error) error {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("decode archive: %w", err)
		}
		return corrupt("%s: truncated", what)
	}
	magic := make([]byte, len(treeMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return short("header", err)
	}
	if string(magic) != treeMagic {
		return corrupt("bad magic %q", magic)
	}
	seen := map[string]bool{}
	dirs := map[string]bool{".": true}
	for {
		kind, err := br.ReadByte()
		if err != nil {
			return short("entry", err)
		}
		if kind == kindEnd {
			if _, err := br.ReadByte(); err != io.EOF {
				if err != nil {
					return short("end", err)
				}
				return corrupt("data after the end marker")
			}
			return nil
		}
		if kind != kindDir && kind != kindFile {
			return corrupt("entry kind %#x", kind)
		}
		pl, err := binary.ReadUvarint(br)
		if err != nil {
			return short("path length", err)
		}
		if pl == 0 || pl > maxPath {
			return corrupt("path length %d (%v)", pl, err)
		}
		pb := make([]byte, pl)
		if _, err := io.ReadFull(br, pb); err != nil {
			return short("path", err)
		}
		p := string(pb)
		if !fs.ValidPath(p) || p == "." || strings.IndexByte(p, 0) >= 0 || len(path.Base(p)) > 255 {
			return corrupt("invalid path %q", p)
		}
		if seen[p] {
			return corrupt("duplicate path %q", p)
		}
		if !dirs[path.Dir(p)] {
			return corrupt("path %q before its directory", p)
		}
		seen[p] = true
		mode, err := binary.ReadUvarint(br)
		if err != nil || mode > 0o777 {
			return corrupt("mode of %q", p)
		}
		e := treeEntry{Dir: kind == kindDir, Path: p, Mode: fs.FileMode(mode)}
		if e.Dir {
			dirs[p] = true
			if err := fn(e, nil); err != nil {
				return err
			}
			continue
		}
		size, err := binary.ReadUvarint(br)
		if err != nil || size > 1<<50 {
			return corrupt("size of %q", p)
		}
		e.Size = int64(size)
		lr := &io.LimitedReader{R: br, N: e.Size}
		if err := fn(e, lr); err != nil {
			return err
		}
		if lr.N != 0 {
			// fn stopped early: drain, so a short body is still detected.
			if _, err := io.Copy(io.Discard, lr); err != nil {
				return short("body of "+p, err)
			}
			if lr.N != 0 {
				return corrupt("body of %q truncated", p)
			}
		}
	}
}

// extractTree writes the entries of r under dir (which must exist), fsyncing
// every file and directory it creates.
func extractTree(r io.Reader, dir string) error {
	var dirs []string
	err := readTree(r, func(e treeEntry, body io.Reader) error {
		target := filepath.Join(dir, filepath.FromSlash(e.Path))
		if e.Dir {
			if err := os.Mkdir(target, e.Mode|0o700); err != nil {
				return fmt.Errorf("extract %s: %w", e.Path, err)
			}
			dirs = append(dirs, target)
			return nil
		}
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.Mode|0o600)
		if err != nil {
			return fmt.Errorf("extract %s: %w", e.Path, err)
		}
		n, err := io.Copy(f, body)
		if err == nil && n != e.Size {
			err = fmt.Errorf("%w: body of %q truncated", ErrCorrupt, e.Path)
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("extract %s: %w", e.Path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := fsutil.SyncDir(dirs[i]); err != nil {
			return err
		}
	}
	return fsutil.SyncDir(dir)
}
