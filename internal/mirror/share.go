package mirror

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/unlimitedcontext/ucl/arweave"
	"sort"
)

// A disclosure is how a grantor hands a grantee the data keys of some of
// its events. Its upload (UC-Kind grant, L1, signed by the grantor) carries
// the SegmentMeta tags with UC-Grantee set: UC-Log-Id the grantor's log,
// UC-Seq-First / UC-Seq-Last the smallest and largest disclosed seq and
// UC-Head-Hash the hash of the event at UC-Seq-Last. Its data (do not
// change; DisclosureVersion is the first byte):
//
//	version u8 = 1
//	grant id [16]          the share_grant event this disclosure belongs to
//	wrapped share key      uvarint length ‖ RSA-OAEP-SHA256(grantee key, share key),
//	                       labelled with the grantor address, log id and grant
//	                       id (crypto.ShareBinding): a copy re-signed by
//	                       another wallet does not unwrap for the grantee
//	keys                   uvarint n ≥ 1, n × (seq u64 LE, 40-byte DEK of that
//	                       event wrapped (RFC 3394) under the share key),
//	                       seqs strictly ascending
//
// The first disclosure of a grant discloses the grant event itself (whose
// body lists the granted chunks) and, for a share_grant v3, the DEKs of
// the granted chunks whose content still exists (seqs before the grant's;
// a chunk tombstoned and shredded by a key rotation before this
// disclosure gets no key, anywhere). A v1/v2 grant carries its chunks'
// DEKs in its body instead. Later ones, written by the grantor's push, disclose the tombstones
// that remove granted chunks and the revoke of the grant, so the grantee
// learns of them without ever holding the grantor's vault key. The event
// bytes themselves come from the grantor's segments, which the grantee
// verifies like a rebuild; a key here only decrypts an event whose header
// and hash that chain vouches for (the AEAD over the header).

// DisclosureVersion is the first byte of a disclosure.
const DisclosureVersion = 1

// maxDisclosureKeys bounds a decoded disclosure (a hostile upload cannot
// make the decoder allocate more).
const maxDisclosureKeys = 1 << 20

// ErrDisclosure is returned when a disclosure's bytes or tags are malformed.
var ErrDisclosure = errors.New("arweave: malformed share disclosure")

// DisclosedKey is one event's data key under the share key.
type DisclosedKey struct {
	Seq     uint64
	Wrapped [40]byte
}

// Disclosure is the data of a grant upload.
type Disclosure struct {
	Grant    [16]byte
	ShareKey []byte // RSA-OAEP-SHA256 to the grantee
	Keys     []DisclosedKey
}

// Encode returns the disclosure's bytes.
func (d *Disclosure) Encode() ([]byte, error) {
	if len(d.Keys) == 0 || len(d.ShareKey) == 0 {
		return nil, fmt.Errorf("encode disclosure: %w: no keys or no share key", ErrDisclosure)
	}
	b := []byte{DisclosureVersion}
	b = append(b, d.Grant[:]...)
	b = binary.AppendUvarint(b, uint64(len(d.ShareKey)))
	b = append(b, d.ShareKey...)
	b = binary.AppendUvarint(b, uint64(len(d.Keys)))
	for i, k := range d.Keys {
		if i > 0 && k.Seq <= d.Keys[i-1].Seq {
			return nil, fmt.Errorf("encode disclosure: %w: seqs not ascending", ErrDisclosure)
		}
		b = binary.LittleEndian.AppendUint64(b, k.Seq)
		b = append(b, k.Wrapped[:]...)
	}
	return b, nil
}

// DecodeDisclosure parses a disclosure, rejecting anything but the one
// canonical encoding.
func DecodeDisclosure(b []byte) (*Disclosure, error) {
	bad := func(what string) (*Disclosure, error) {
		return nil, fmt.Errorf("decode disclosure: %w: %s", ErrDisclosure, what)
	}
	if len(b) < 1+16 || b[0] != DisclosureVersion {
		return bad("short or unknown version")
	}
	d := &Disclosure{}
	copy(d.Grant[:], b[1:17])
	b = b[17:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b)-k) || n > 4096 {
		return bad("share key length")
	}
	d.ShareKey = append([]byte(nil), b[k:k+int(n)]...)
	b = b[k+int(n):]
	n, k = binary.Uvarint(b)
	if k <= 0 || n == 0 || n > maxDisclosureKeys || n*48 != uint64(len(b)-k) {
		return bad("key count")
	}
	b = b[k:]
	d.Keys = make([]DisclosedKey, n)
	for i := range d.Keys {
		d.Keys[i].Seq = binary.LittleEndian.Uint64(b)
		copy(d.Keys[i].Wrapped[:], b[8:48])
		b = b[48:]
		if i > 0 && d.Keys[i].Seq <= d.Keys[i-1].Seq {
			return bad("seqs not ascending")
		}
	}
	return d, nil
}

// DisclosureUpload is a disclosure ready to post.
type DisclosureUpload struct {
	LogID    [16]byte
	Grantee  string
	LastHash Hash // hash of the event at the last disclosed seq
	D        Disclosure
}

// PostDisclosure uploads a disclosure signed by the client's wallet and
// returns its transaction id.
func PostDisclosure(ctx context.Context, c Gateway, u DisclosureUpload) (string, error) {
	data, err := u.D.Encode()
	if err != nil {
		return "", err
	}
	m := SegmentMeta{Kind: KindGrant, LogID: u.LogID, FirstSeq: u.D.Keys[0].Seq,
		LastSeq: u.D.Keys[len(u.D.Keys)-1].Seq, HeadHash: u.LastHash, Grantee: u.Grantee}
	id, err := c.Upload(ctx, data, m.Tags())
	if err != nil {
		return "", fmt.Errorf("post disclosure: %w", err)
	}
	return id, nil
}

// FoundDisclosure is a disclosure fetched and checked: its transaction's
// signature verifies, its owner is the grantor it names and its signed
// tags agree with its bytes.
type FoundDisclosure struct {
	TxID    string
	Grantor string // address, from the verified owner key
	Meta    SegmentMeta
	D       *Disclosure
	Height  int64
}

// maxDisclosureBytes bounds a fetched disclosure.
const maxDisclosureBytes = 64 << 20

// FetchDisclosures finds the disclosures addressed to grantee and fetches
// each with its signature verified (FetchVerifiedTx). One that fails a
// check is returned in rejected with why, not used; the caller reports it.
// The result is ordered by grantor, log, first seq and tx id.
func FetchDisclosures(ctx context.Context, c Gateway, grantee string) (found []FoundDisclosure, rejected []TxRejectedError, err error) {
	txs, err := FindGrants(ctx, c, grantee)
	if err != nil {
		return nil, nil, fmt.Errorf("find grants: %w", err)
	}
	for _, t := range txs {
		reject := func(e error) { rejected = append(rejected, TxRejectedError{TxID: t.ID, Err: e}) }
		vt, err := c.FetchVerifiedTx(ctx, t.ID, maxDisclosureBytes)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
			reject(err)
			continue
		}
		m, err := ParseTags(vt.Tags)
		if err != nil {
			reject(err)
			continue
		}
		if m.Kind != KindGrant || m.Grantee != grantee {
			reject(fmt.Errorf("%w: signed tags name another kind or grantee", arweave.ErrTags))
			continue
		}
		d, err := DecodeDisclosure(vt.Data)
		if err != nil {
			reject(err)
			continue
		}
		if d.Keys[0].Seq != m.FirstSeq || d.Keys[len(d.Keys)-1].Seq != m.LastSeq {
			reject(fmt.Errorf("%w: tags and data disagree on the seqs", ErrDisclosure))
			continue
		}
		found = append(found, FoundDisclosure{TxID: t.ID, Grantor: vt.Owner, Meta: m, D: d, Height: vt.Height})
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if a.Grantor != b.Grantor {
			return a.Grantor < b.Grantor
		}
		if a.Meta.LogID != b.Meta.LogID {
			return LogIDHex(a.Meta.LogID) < LogIDHex(b.Meta.LogID)
		}
		if a.Meta.FirstSeq != b.Meta.FirstSeq {
			return a.Meta.FirstSeq < b.Meta.FirstSeq
		}
		return a.TxID < b.TxID
	})
	return found, rejected, nil
}
