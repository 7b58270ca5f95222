package log

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// ErrBadProof is returned when a checkpoint or an inclusion proof does not
// parse or does not verify; the message says which part failed.
var ErrBadProof = errors.New("log: proof does not verify")

// Checkpoint is a C2SP tlog-checkpoint: the tree of the log's first Size
// events has root Root. Its signed form is a note (golang.org/x/mod/sumdb/
// note) whose text is
//
//	<origin>\n<size, decimal>\n<root, standard base64>\n
//
// and whose origin is "ucl/<log id>".
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   []byte
}

// CheckpointOrigin is the origin line of a log's checkpoints.
func CheckpointOrigin(logID string) string { return "ucl/" + logID }

// Text is the checkpoint's note text.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root))
}

// ParseCheckpoint parses a checkpoint's note text, strictly: exactly the
// three lines (no extension lines), a canonical size and a 32-byte root.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint is not three lines", ErrBadProof)
	}
	origin := strings.TrimSuffix(lines[0], "\n")
	sizeS := strings.TrimSuffix(lines[1], "\n")
	rootS := strings.TrimSuffix(lines[2], "\n")
	size, err := strconv.ParseUint(sizeS, 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != sizeS {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint size %q", ErrBadProof, sizeS)
	}
	root, err := base64.StdEncoding.DecodeString(rootS)
	if err != nil || len(root) != HashSize || base64.StdEncoding.EncodeToString(root) != rootS {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint root %q", ErrBadProof, rootS)
	}
	if origin == "" || strings.ContainsAny(origin, " \t\r") {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint origin %q", ErrBadProof, origin)
	}
	return Checkpoint{Origin: origin, Size: size, Root: root}, nil
}

// SignCheckpoint returns the signed note of c under the note signer key
// skey (crypto.NoteKey).
func SignCheckpoint(c Checkpoint, skey string) ([]byte, error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	msg, err := note.Sign(&note.Note{Text: c.Text()}, s)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	return msg, nil
}

// OpenCheckpoint verifies a signed checkpoint note against the verifier key
// vkey and parses it.
func OpenCheckpoint(msg []byte, vkey string) (Checkpoint, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: verifier key: %v", ErrBadProof, err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint signature: %v", ErrBadProof, err)
	}
	return ParseCheckpoint(n.Text)
}

// ProofVersion is the version of the proof file format.
const ProofVersion = 1

// Proof is a self-contained inclusion proof of one event (the audit proof
// file of `ucl audit prove`). The body stays encrypted: it is carried only
// so the verifier can recompute the event hash from the header, which
// binds the header to the leaf. JSON field names and encodings are part of
// the format (see the package doc).
type Proof struct {
	Version      int      `json:"version"`
	LogID        string   `json:"log_id"`
	Seq          uint64   `json:"seq"`
	Header       string   `json:"header"`          // hex of the 110-byte header
	Body         string   `json:"body"`            // base64 of the encrypted body
	EventHash    string   `json:"event_hash"`      // hex
	TreeSize     uint64   `json:"tree_size"`       // size of the checkpoint's tree
	Inclusion    []string `json:"inclusion"`       // hex node hashes, leaf to root
	Checkpoint   string   `json:"checkpoint"`      // the signed note
	NoteKey      string   `json:"note_key"`        // verifier key of the signer
	CheckpointTx string   `json:"checkpoint_tx"`   // Arweave transaction anchoring it
	Owner        string   `json:"owner"`           // wallet address that signed the transaction
	AnchoredAt   int64    `json:"anchored_height"` // block height, 0 if not known when proven
}

// DecodeProof parses a proof file strictly (unknown fields are an error).
func DecodeProof(b []byte) (*Proof, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Proof
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: decode proof: %v", ErrBadProof, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: decode proof: trailing data", ErrBadProof)
	}
	if p.Version != ProofVersion {
		return nil, fmt.Errorf("%w: proof version %d", ErrUnsupportedVersion, p.Version)
	}
	return &p, nil
}

// ProvenEvent is what a verified proof establishes.
type ProvenEvent struct {
	Header     Header
	Hash       Hash
	Checkpoint Checkpoint
}

// Verify checks everything in the proof that needs no gateway: the
// checkpoint note's signature under p.NoteKey, its origin and size, the
// header against the event hash, and the inclusion of the event in the
// checkpoint's tree. Whether the checkpoint was anchored on Arweave by
// p.Owner is checked separately, against the transaction.
func (p *Proof) Verify() (*ProvenEvent, error) {
	cp, err := OpenCheckpoint([]byte(p.Checkpoint), p.NoteKey)
	if err != nil {
		return nil, err
	}
	if cp.Origin != CheckpointOrigin(p.LogID) {
		return nil, fmt.Errorf("%w: checkpoint is of %q, the proof names log %s", ErrBadProof, cp.Origin, p.LogID)
	}
	if cp.Size != p.TreeSize {
		return nil, fmt.Errorf("%w: checkpoint has %d events, the proof says %d", ErrBadProof, cp.Size, p.TreeSize)
	}
	hdr, err := hex.DecodeString(p.Header)
	if err != nil || len(hdr) != HeaderSize {
		return nil, fmt.Errorf("%w: header is not %d bytes of hex", ErrBadProof, HeaderSize)
	}
	body, err := base64.StdEncoding.DecodeString(p.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: body is not base64", ErrBadProof)
	}
	h, err := DecodeHeader(append(hdr, body...))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadProof, err)
	}
	if h.Seq != p.Seq {
		return nil, fmt.Errorf("%w: header is seq %d, the proof says %d", ErrBadProof, h.Seq, p.Seq)
	}
	hash := HashRaw(append(hdr, body...))
	if hash.String() != p.EventHash {
		return nil, fmt.Errorf("%w: the header and body hash to %s, not %s", ErrBadProof, hash, p.EventHash)
	}
	nodes := make([][]byte, len(p.Inclusion))
	for i, s := range p.Inclusion {
		if nodes[i], err = hex.DecodeString(s); err != nil || len(nodes[i]) != HashSize {
			return nil, fmt.Errorf("%w: inclusion node %d", ErrBadProof, i)
		}
	}
	if err := VerifyInclusion(hash, p.Seq, p.TreeSize, cp.Root, nodes); err != nil {
		return nil, fmt.Errorf("%w: inclusion: %v", ErrBadProof, err)
	}
	return &ProvenEvent{Header: h, Hash: hash, Checkpoint: cp}, nil
}

// ProveEvent builds the gateway-independent part of a proof of event seq
// against the tree of the first size events (which must be at least seq):
// the header and encrypted body, the hash, and the inclusion path. The
// caller adds the signed checkpoint and its anchoring transaction.
func ProveEvent(l *Log, t *Tree, seq, size uint64) (*Proof, error) {
	raw, err := l.Raw(seq)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d: %w", seq, err)
	}
	nodes, err := t.InclusionProof(seq, size)
	if err != nil {
		return nil, fmt.Errorf("prove seq %d: %w", seq, err)
	}
	p := &Proof{Version: ProofVersion, Seq: seq, TreeSize: size,
		Header:    hex.EncodeToString(raw[:HeaderSize]),
		Body:      base64.StdEncoding.EncodeToString(raw[HeaderSize:]),
		EventHash: HashRaw(raw).String()}
	for _, n := range nodes {
		p.Inclusion = append(p.Inclusion, hex.EncodeToString(n))
	}
	return p, nil
}

// Anchor is the data of a checkpoint's Arweave transaction: the signed
// note and a consistency proof from the previous anchored checkpoint (of
// PrevSize events; 0 for the first, with no proof). Its encoding is
//
//	<signed note>consistency <prev size>\n(<node, std base64>\n)*
//
// The note ends with its signature lines ("— " …), so the first line
// after them that does not start with "— " opens the consistency block.
type Anchor struct {
	Note        []byte
	PrevSize    uint64
	Consistency [][]byte
}

const consistencyLine = "consistency "

// Encode returns the anchor's transaction data.
func (a Anchor) Encode() []byte {
	var b bytes.Buffer
	b.Write(a.Note)
	fmt.Fprintf(&b, "%s%d\n", consistencyLine, a.PrevSize)
	for _, n := range a.Consistency {
		b.WriteString(base64.StdEncoding.EncodeToString(n))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// DecodeAnchor parses a checkpoint transaction's data strictly. It does not
// verify the note's signature or the proof.
func DecodeAnchor(data []byte) (Anchor, error) {
	// The note: text (no blank line in a checkpoint), a blank line, then
	// signature lines.
	sep := bytes.Index(data, []byte("\n\n"))
	if sep < 0 {
		return Anchor{}, fmt.Errorf("%w: anchor has no signed note", ErrBadProof)
	}
	end := sep + 2
	for end < len(data) && bytes.HasPrefix(data[end:], []byte("— ")) {
		nl := bytes.IndexByte(data[end:], '\n')
		if nl < 0 {
			return Anchor{}, fmt.Errorf("%w: anchor note is cut short", ErrBadProof)
		}
		end += nl + 1
	}
	if end == sep+2 {
		return Anchor{}, fmt.Errorf("%w: anchor note has no signature", ErrBadProof)
	}
	a := Anchor{Note: data[:end:end]}
	lines := strings.Split(string(data[end:]), "\n")
	if len(lines) < 2 || lines[len(lines)-1] != "" || !strings.HasPrefix(lines[0], consistencyLine) {
		return Anchor{}, fmt.Errorf("%w: anchor has no consistency block", ErrBadProof)
	}
	ps := strings.TrimPrefix(lines[0], consistencyLine)
	prev, err := strconv.ParseUint(ps, 10, 64)
	if err != nil || strconv.FormatUint(prev, 10) != ps {
		return Anchor{}, fmt.Errorf("%w: anchor previous size %q", ErrBadProof, ps)
	}
	a.PrevSize = prev
	for i, s := range lines[1 : len(lines)-1] {
		n, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(n) != HashSize || base64.StdEncoding.EncodeToString(n) != s {
			return Anchor{}, fmt.Errorf("%w: anchor consistency node %d", ErrBadProof, i)
		}
		a.Consistency = append(a.Consistency, n)
	}
	if prev == 0 && len(a.Consistency) > 0 {
		return Anchor{}, fmt.Errorf("%w: anchor has a consistency proof from the empty tree", ErrBadProof)
	}
	return a, nil
}

// ErrInconsistent is returned by VerifyChain when a later checkpoint does
// not extend an earlier one: the log was rewritten or forked.
var ErrInconsistent = errors.New("log: checkpoints are inconsistent")

// ChainLink is an anchored checkpoint (its note already verified) with
// the consistency proof its anchor carries, and where it was anchored.
type ChainLink struct {
	ID         string
	Checkpoint Checkpoint
	Anchor     Anchor
}

// VerifyChain checks that every link, taken in order (by size), extends
// the checkpoint before it, starting from start: a link of the same size
// must have the same root; a larger one must carry a consistency proof
// from exactly the previous size that leads from the previous root to its
// own. By induction every link then extends start.
func VerifyChain(start ChainLink, links []ChainLink) error {
	cur := start
	for _, l := range links {
		c, p := l.Checkpoint, cur.Checkpoint
		switch {
		case c.Size < p.Size:
			return fmt.Errorf("%w: checkpoint %s (%d events) comes after %s (%d events)", ErrInconsistent, l.ID, c.Size, cur.ID, p.Size)
		case c.Size == p.Size:
			if !bytes.Equal(c.Root, p.Root) {
				return fmt.Errorf("%w: checkpoints %s and %s both have %d events but different roots (%x, %x)", ErrInconsistent, cur.ID, l.ID, c.Size, p.Root, c.Root)
			}
		case l.Anchor.PrevSize != p.Size:
			return fmt.Errorf("%w: checkpoint %s (%d events) does not extend checkpoint %s (%d events): its consistency proof starts at %d events",
				ErrInconsistent, l.ID, c.Size, cur.ID, p.Size, l.Anchor.PrevSize)
		default:
			// The library's message lists both roots as byte slices; this
			// one names the checkpoints.
			if err := VerifyConsistency(p.Size, c.Size, p.Root, c.Root, l.Anchor.Consistency); err != nil {
				return fmt.Errorf("%w: checkpoint %s (%d events, root %x) is not consistent with checkpoint %s (%d events, root %x): its consistency proof does not lead from one root to the other",
					ErrInconsistent, l.ID, c.Size, c.Root, cur.ID, p.Size, p.Root)
			}
		}
		cur = l
	}
	return nil
}
