package rotate

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// JournalFile is the rotation journal's name in the store directory.
const JournalFile = "rotate.journal"

// ErrBadJournal is returned when DIR/rotate.journal cannot be decoded: a
// key rotation was interrupted and its state is unreadable. Nothing is
// changed; the rotation is not resumed until the file is dealt with.
var ErrBadJournal = errors.New("rotate: malformed key-rotation journal")

// Rotation phases, in the order a rotation passes them (wire values).
const (
	rotBegun    = 1 // the journal exists; the new key may be in vault.key
	rotKeyed    = 2 // vault.key holds both epochs; ucl.json names the new key
	rotRekeyed  = 3 // every live event's DEK is rewrapped by rekey events
	rotCleaned  = 4 // local state holding shredded content is rebuilt or gone
	rotJournalN = 29
)

var rotMagic = [8]byte{'U', 'C', 'L', 'R', 'O', 'T', 0, 1}

// rotJournal is DIR/rotate.journal (format in doc.go).
type rotJournal struct {
	Phase uint8
	From  uint32  // the epoch being shredded
	To    uint32  // the new epoch (From+1)
	NewFP [8]byte // the new key's fingerprint digest
}

// fpDigest is the hex part of a key fingerprint ("EPOCH:16 hex").
func fpDigest(fp string) ([8]byte, error) {
	var d [8]byte
	i := strings.IndexByte(fp, ':')
	b, err := hex.DecodeString(fp[i+1:])
	if i < 0 || err != nil || len(b) != 8 {
		return d, fmt.Errorf("bad key fingerprint %q", fp)
	}
	copy(d[:], b)
	return d, nil
}

func (j rotJournal) encode() []byte {
	b := make([]byte, 0, rotJournalN)
	b = append(b, rotMagic[:]...)
	b = append(b, j.Phase)
	b = binary.LittleEndian.AppendUint32(b, j.From)
	b = binary.LittleEndian.AppendUint32(b, j.To)
	b = append(b, j.NewFP[:]...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func decodeRotJournal(b []byte) (rotJournal, error) {
	var j rotJournal
	if len(b) != rotJournalN {
		return j, fmt.Errorf("%w: %d bytes, want %d", ErrBadJournal, len(b), rotJournalN)
	}
	if [8]byte(b[:8]) != rotMagic {
		return j, fmt.Errorf("%w: bad magic or version", ErrBadJournal)
	}
	if crc32.Checksum(b[:rotJournalN-4], crc32.MakeTable(crc32.Castagnoli)) != binary.LittleEndian.Uint32(b[rotJournalN-4:]) {
		return j, fmt.Errorf("%w: checksum mismatch", ErrBadJournal)
	}
	j.Phase = b[8]
	j.From = binary.LittleEndian.Uint32(b[9:])
	j.To = binary.LittleEndian.Uint32(b[13:])
	copy(j.NewFP[:], b[17:25])
	if j.Phase < rotBegun || j.Phase > rotCleaned {
		return j, fmt.Errorf("%w: phase %d", ErrBadJournal, j.Phase)
	}
	if j.From == 0 || j.To != j.From+1 {
		return j, fmt.Errorf("%w: epochs %d -> %d", ErrBadJournal, j.From, j.To)
	}
	return j, nil
}

// readRotJournal reads the journal of dir; ok is false when there is none.
func readRotJournal(path string) (rotJournal, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rotJournal{}, false, nil
	}
	if err != nil {
		return rotJournal{}, false, fmt.Errorf("read key-rotation journal: %w", err)
	}
	j, err := decodeRotJournal(b)
	return j, err == nil, err
}

// writeRotJournal replaces the journal atomically (and durably).
func writeRotJournal(path string, j rotJournal) error {
	if err := fsutil.WriteFileAtomic(path, j.encode(), 0o600); err != nil {
		return fmt.Errorf("write key-rotation journal: %w", err)
	}
	return nil
}
