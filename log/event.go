package log

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log/eventhash"
)

// Wire constants. Do not change: they are part of every stored and mirrored
// event.
const (
	// FormatVersion is the header version written (4: format 3 with a
	// seal and a hash that leave the chain position out of all but the
	// last step; see the package doc); FormatVersion3 (one batch key per
	// append request, bodies sealed with ChaCha20-Poly1305),
	// FormatVersion2 (the same under AES-256-GCM) and FormatVersion1 (a
	// random DEK per event, AES-256-GCM) are still read.
	FormatVersion  = 4
	FormatVersion3 = 3
	FormatVersion2 = 2
	FormatVersion1 = 1
	HeaderSize     = 110
	IDSize         = 16
	HashSize       = 32
	WrappedKeySize = 40
	crcSize        = 4

	storeBodyVersion     = 1
	tombstoneBodyVersion = 1
	grantBodyVersion     = 1
	grantBodyVersion2    = 2
	grantBodyVersion3    = 3
	revokeBodyVersion    = 1
	rekeyBodyVersion     = 1
)

// Type is an event type. Wire values: do not change.
type Type uint8

const (
	TypeStore       Type = 1
	TypeTombstone   Type = 2
	TypeShareGrant  Type = 3
	TypeShareRevoke Type = 4
	TypeRekey       Type = 5
	TypeEdit        Type = 6
)

var typeNames = map[Type]string{
	TypeStore: "store", TypeTombstone: "tombstone", TypeShareGrant: "share_grant",
	TypeShareRevoke: "share_revoke", TypeRekey: "rekey", TypeEdit: "edit",
}

func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Valid reports whether t is a known event type.
func (t Type) Valid() bool { return knownTypes[t] }

// knownTypes and knownKinds are typeNames and kindNames as tables: every
// decoded header and store body checks one (a map look-up each was a few
// percent of a replay).
var knownTypes, knownKinds = func() (t, k [256]bool) {
	for x := range typeNames {
		t[x] = true
	}
	for x := range kindNames {
		k[x] = true
	}
	return t, k
}()

// ParseType parses a type name ("store", "tombstone", ...).
func ParseType(s string) (Type, error) {
	for t, n := range typeNames {
		if n == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("parse type %q: %w", s, ErrUnknownType)
}

// ID is a 16-byte event id.
type ID [IDSize]byte

func (id ID) String() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether the id is all zeros (unset).
func (id ID) IsZero() bool { return id == ID{} }

// ParseID parses 32 hex digits.
func ParseID(s string) (ID, error) {
	var id ID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != IDSize {
		return id, fmt.Errorf("parse event id %q: want 32 hex digits", s)
	}
	copy(id[:], b)
	return id, nil
}

// Hash is a SHA-256 event hash.
type Hash [HashSize]byte

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is all zeros (the prev of seq 1).
func (h Hash) IsZero() bool { return h == Hash{} }

// ParseHash parses 64 hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != HashSize {
		return h, fmt.Errorf("parse hash %q: want 64 hex digits", s)
	}
	copy(h[:], b)
	return h, nil
}

// Header is the plaintext, authenticated part of an event.
type Header struct {
	Version  uint8
	Type     Type
	Seq      uint64
	Time     int64 // append time, unix ms
	ID       ID
	KeyEpoch uint32
	// WrappedDEK is the wrapped key of the event: its DEK in format 1, the
	// batch key its DEK is derived from in formats 2 and 3 (BatchKeyed).
	WrappedDEK [WrappedKeySize]byte
	Prev       Hash
}

// BatchKeyed reports whether h's wrapped key is a batch key (formats 2
// to 4) rather than the event's own DEK (format 1).
func (h *Header) BatchKeyed() bool { return h.Version >= FormatVersion2 }

// Cipher is the AEAD h's body is sealed with: ChaCha20-Poly1305 in formats
// 3 and 4, AES-256-GCM in formats 1 and 2.
func (h *Header) Cipher() crypto.AEAD { return cipherOf(h.Version) }

func cipherOf(v uint8) crypto.AEAD {
	if v >= FormatVersion3 {
		return crypto.ChaCha20Poly1305
	}
	return crypto.AESGCM
}

// aadSize is the size of a format-4 seal's associated data: version,
// type, time and event id.
const aadSize = 1 + 1 + 8 + IDSize

// sealAAD returns the associated data of the seal of the event whose
// bytes start with raw's header: the whole header in formats 1 to 3;
// from format 4 only what is known before the event takes its place in
// the chain (version, type, time, id: header bytes 0-1 and 10-33, into
// buf), so that a body is sealed on any core. The seq, key epoch, wrapped
// key and prev left out are bound by the hash chain, and a changed
// wrapped key or epoch gives another DEK, which fails the seal anyway.
func sealAAD(raw []byte, buf *[aadSize]byte) []byte {
	if raw[0] < FormatVersion {
		return raw[:HeaderSize]
	}
	buf[0], buf[1] = raw[0], raw[1]
	copy(buf[2:], raw[10:34])
	return buf[:]
}

// HashRaw returns the hash of the event whose bytes (header ‖ body) are
// raw: the link of the chain, by the rule of its format (package
// eventhash).
func HashRaw(raw []byte) Hash { return eventhash.Sum(raw) }

// knownVersion reports whether a header of version v is read by this build.
func knownVersion(v uint8) bool { return v >= FormatVersion1 && v <= FormatVersion }

// Encode writes the header's HeaderSize bytes into b.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	b[0] = h.Version
	b[1] = byte(h.Type)
	binary.LittleEndian.PutUint64(b[2:], h.Seq)
	binary.LittleEndian.PutUint64(b[10:], uint64(h.Time))
	copy(b[18:34], h.ID[:])
	binary.LittleEndian.PutUint32(b[34:], h.KeyEpoch)
	copy(b[38:78], h.WrappedDEK[:])
	copy(b[78:110], h.Prev[:])
}

// DecodeHeader parses the header at the start of raw. It checks the version
// and the type; it does not check the chain.
func DecodeHeader(raw []byte) (Header, error) {
	var h Header
	if len(raw) < HeaderSize {
		return h, fmt.Errorf("decode header: %w: %d bytes, want at least %d", ErrMalformed, len(raw), HeaderSize)
	}
	h.Version = raw[0]
	if !knownVersion(h.Version) {
		return h, fmt.Errorf("decode header: %w: format version %d (this build reads %d to %d)", ErrUnsupportedVersion, h.Version, FormatVersion1, FormatVersion)
	}
	h.Type = Type(raw[1])
	if !h.Type.Valid() {
		return h, fmt.Errorf("decode header: %w: %d", ErrUnknownType, raw[1])
	}
	h.Seq = binary.LittleEndian.Uint64(raw[2:])
	if h.Seq == 0 {
		return h, fmt.Errorf("decode header: %w: seq 0", ErrMalformed)
	}
	h.Time = int64(binary.LittleEndian.Uint64(raw[10:]))
	copy(h.ID[:], raw[18:34])
	h.KeyEpoch = binary.LittleEndian.Uint32(raw[34:])
	copy(h.WrappedDEK[:], raw[38:78])
	copy(h.Prev[:], raw[78:110])
	return h, nil
}

// Kind is what a stored chunk is.
type Kind uint8

// Kinds. Wire values: do not change.
const (
	KindConversation Kind = 1
	KindDocument     Kind = 2
	KindKnowledge    Kind = 3
	KindToolCall     Kind = 4
	// KindProfile is a derived summary of one subject (package consolidate).
	KindProfile Kind = 5
)

var kindNames = map[Kind]string{KindConversation: "conversation", KindDocument: "document", KindKnowledge: "knowledge", KindToolCall: "tool_call", KindProfile: "profile"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind parses a kind name; "" means conversation.
func ParseKind(s string) (Kind, error) {
	if s == "" {
		return KindConversation, nil
	}
	for k, n := range kindNames {
		if n == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("parse kind %q: %w: want conversation, document, knowledge, tool_call or profile", s, ErrMalformed)
}

// Roles are the roles a stored item may be written with ("" : none, as
// for documents and facts). They follow the chat-completions roles. Input
// is checked against them (CheckRole); decoding never is, so a log
// written before the rule still reads.
var Roles = []string{"user", "assistant", "system", "developer", "tool"}

// CheckRole returns an error unless role is "" or one of Roles; the
// caller wraps it in its own input error.
func CheckRole(role string) error {
	if role == "" {
		return nil
	}
	for _, r := range Roles {
		if r == role {
			return nil
		}
	}
	return fmt.Errorf("role %q: want user, assistant, system, developer or tool", role)
}

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	*k = v
	return err
}

// Body is the decrypted part of an event: one of *Store, *Tombstone,
// *ShareGrant, *ShareRevoke, *Rekey.
type Body interface {
	Type() Type
	// appendTo appends the canonical encoding. hdr gives defaults that
	// optional fields are compared against (store: chunk id, content time).
	appendTo(b []byte, hdr *Header) ([]byte, error)
}

// Store is one chunk of memory.
type Store struct {
	ChunkID     string            `json:"chunk_id"`
	Kind        Kind              `json:"kind"`
	Session     string            `json:"session,omitempty"`
	Role        string            `json:"role,omitempty"`
	Content     string            `json:"content"`
	Meta        map[string]string `json:"meta,omitempty"`
	Parent      string            `json:"parent,omitempty"`
	ChunkParent string            `json:"chunk_parent,omitempty"`
	ChunkIndex  int               `json:"chunk_index,omitempty"`
	Time        int64             `json:"time_ms"` // time of the content, unix ms
	// Tool is set on a tool call (kind tool_call): Content is its result.
	// Only the first chunk of a chunked result carries it.
	Tool *ToolCall `json:"tool,omitempty"`
	// Supersedes lists items this one replaces as outdated.
	Supersedes []string `json:"supersedes,omitempty"`
}

// Tombstone hides its targets from every projection.
type Tombstone struct {
	Chunks  []string `json:"chunks,omitempty"`
	Session string   `json:"session,omitempty"`
	From    int64    `json:"from_ms,omitempty"` // time range of content, unix ms, inclusive
	To      int64    `json:"to_ms,omitempty"`   // exclusive; 0 with From 0 means no range
	Reason  string   `json:"reason,omitempty"`
}

// WrappedKey is a DEK (of the event at Seq) wrapped under another key.
type WrappedKey struct {
	Seq     uint64               `json:"seq"`
	Wrapped [WrappedKeySize]byte `json:"-"`
}

// ShareGrant gives an Arweave address the DEKs of a scope.
type ShareGrant struct {
	Grantee  string       `json:"grantee"`
	ShareKey []byte       `json:"-"` // share key, RSA-OAEP-SHA256 to the grantee
	Sessions []string     `json:"sessions,omitempty"`
	Chunks   []string     `json:"chunks,omitempty"`
	Keys     []WrappedKey `json:"keys,omitempty"`
	// Follow asks for chunks stored later in the granted sessions (v2).
	Follow bool `json:"follow,omitempty"`
	// Note is the grantor's note to the grantee (v2).
	Note string `json:"note,omitempty"`
	// OwnKey is the share key itself (0 or ShareKeySize bytes, v2): the
	// body is sealed like any other, so only the grantor (vault key) and
	// the grantee (who unwraps the share key anyway) read it. The grantor
	// needs it to disclose later events of the grant (tombstones, the
	// revoke) to the grantee without the grantee's RSA key.
	OwnKey []byte `json:"-"`
	// Seqs are the events of the granted chunks, ascending, Seqs[i] the
	// event of Chunks[i] (v3, which has no Keys). Their DEKs are not in the body: the grantor's push
	// discloses them under the share key, each only while its content
	// exists, so a chunk tombstoned and shredded by a key rotation before
	// the grant is disclosed leaves no key to its ciphertext with the
	// grantee. A v1/v2 body carries the DEKs in Keys instead.
	Seqs []uint64 `json:"seqs,omitempty"`
}

// ShareKeySize is the size of a share key (AES-256).
const ShareKeySize = 32

// grantFollow is the v2 flag bit of ShareGrant.Follow.
const grantFollow = 0x01

// ShareRevoke stops future sharing under a grant.
type ShareRevoke struct {
	Grant   ID     `json:"grant"`
	Grantee string `json:"grantee"`
	Reason  string `json:"reason,omitempty"`
}

// Rekey rewraps live DEKs under a new vault-key epoch.
type Rekey struct {
	Epoch uint32       `json:"epoch"`
	Keys  []WrappedKey `json:"keys,omitempty"`
}

func (*Store) Type() Type       { return TypeStore }
func (*Tombstone) Type() Type   { return TypeTombstone }
func (*ShareGrant) Type() Type  { return TypeShareGrant }
func (*ShareRevoke) Type() Type { return TypeShareRevoke }
func (*Rekey) Type() Type       { return TypeRekey }

// Validate checks a store body's fields before it is appended.
func (s *Store) Validate() error {
	if _, ok := kindNames[s.Kind]; !ok {
		return fmt.Errorf("field kind: %w: %v", ErrMalformed, s.Kind)
	}
	if strings.TrimSpace(s.Content) == "" && s.Tool == nil {
		// A tool call may be stored before its result exists.
		return fmt.Errorf("field content: %w: empty", ErrMalformed)
	}
	if err := s.validateConv(); err != nil {
		return err
	}
	if s.ChunkIndex < 0 {
		return fmt.Errorf("field chunk_index: %w: negative", ErrMalformed)
	}
	// Text is kept byte for byte, so it must be text: invalid UTF-8 would
	// come back altered (U+FFFD) from every JSON front end.
	for _, f := range [...]struct{ name, v string }{{"content", s.Content}, {"session", s.Session}, {"role", s.Role},
		{"chunk_id", s.ChunkID}, {"parent", s.Parent}, {"chunk_parent", s.ChunkParent}} {
		if err := checkUTF8(f.name, f.v); err != nil {
			return err
		}
	}
	for k, v := range s.Meta {
		if err := checkUTF8("meta", k); err != nil {
			return err
		}
		if err := checkUTF8("meta."+k, v); err != nil {
			return err
		}
	}
	return nil
}

// checkUTF8 names the byte offset of the first invalid UTF-8 sequence.
func checkUTF8(field, v string) error {
	if utf8.ValidString(v) {
		return nil
	}
	for i, r := range v {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(v[i:]); n == 1 {
				return fmt.Errorf("field %s: %w: invalid UTF-8 at byte %d", field, ErrMalformed, i)
			}
		}
	}
	return fmt.Errorf("field %s: %w: invalid UTF-8", field, ErrMalformed)
}

// EncodeBody returns the canonical encoding of b as it appears (before
// encryption) in an event with header hdr.
func EncodeBody(b Body, hdr *Header) ([]byte, error) {
	return b.appendTo(make([]byte, 0, bodySizeHint(b)), hdr)
}

// bodySizeHint is about the encoded size of b (at least it, for a store
// or edit body), so that an append encodes into one allocation instead
// of growing the buffer two or three times (issue 26: it was a tenth of
// an append's allocated bytes).
func bodySizeHint(b Body) int {
	switch v := b.(type) {
	case *Store:
		return v.sizeHint()
	case *Edit:
		n := 64 + len(v.Target) + len(v.By) + v.Store.sizeHint()
		for _, r := range v.Removes {
			n += len(r) + binary.MaxVarintLen64
		}
		return n
	}
	return 64
}

func (s *Store) sizeHint() int {
	const u = binary.MaxVarintLen64 // a length prefix or a uvarint, at most
	n := 3 + 8 + 9*u + len(s.ChunkID) + len(s.Session) + len(s.Role) + len(s.Content) + len(s.Parent) + len(s.ChunkParent)
	for k, v := range s.Meta {
		n += 2*u + len(k) + len(v)
	}
	if s.Tool != nil {
		n += 3*u + len(s.Tool.Name) + len(s.Tool.Args) + len(s.Tool.Status)
	}
	for _, x := range s.Supersedes {
		n += u + len(x)
	}
	return n
}

const (
	flagChunkID     = 0x01
	flagParent      = 0x02
	flagChunkParent = 0x04
	flagMeta        = 0x08
	flagTime        = 0x10
	storeFlagsAll   = 0x1f
	// Store v2 flags (see conv.go); a body using neither is encoded as v1.
	flagTool       = 0x20
	flagSupersedes = 0x40
	storeFlagsV2   = 0x7f
)

func (s *Store) appendTo(b []byte, hdr *Header) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var flags byte
	if s.ChunkID != "" && !isHexID(s.ChunkID, hdr.ID) {
		flags |= flagChunkID
	}
	if s.Parent != "" {
		flags |= flagParent
	}
	if s.ChunkParent != "" || s.ChunkIndex != 0 {
		flags |= flagChunkParent
	}
	if len(s.Meta) > 0 {
		flags |= flagMeta
	}
	if s.Time != 0 && s.Time != hdr.Time {
		flags |= flagTime
	}
	if s.Tool != nil {
		flags |= flagTool
	}
	if len(s.Supersedes) > 0 {
		flags |= flagSupersedes
	}
	version := byte(storeBodyVersion)
	if flags&^storeFlagsAll != 0 {
		version = storeBodyV2
	}
	b = append(b, version, flags, byte(s.Kind))
	b = appendStr(b, s.Session)
	b = appendStr(b, s.Role)
	b = appendStr(b, s.Content)
	if flags&flagChunkID != 0 {
		b = appendStr(b, s.ChunkID)
	}
	if flags&flagParent != 0 {
		b = appendStr(b, s.Parent)
	}
	if flags&flagChunkParent != 0 {
		b = appendStr(b, s.ChunkParent)
		b = binary.AppendUvarint(b, uint64(s.ChunkIndex))
	}
	if flags&flagMeta != 0 {
		keys := make([]string, 0, len(s.Meta))
		for k := range s.Meta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = appendStr(b, k)
			b = appendStr(b, s.Meta[k])
		}
	}
	if flags&flagTime != 0 {
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Time))
	}
	return s.appendConv(b, flags), nil
}

func (t *Tombstone) appendTo(b []byte, _ *Header) ([]byte, error) {
	if len(t.Chunks) == 0 && t.Session == "" && t.From == 0 && t.To == 0 {
		return nil, fmt.Errorf("field targets: %w: a tombstone needs chunks, a session or a time range", ErrMalformed)
	}
	if (t.From != 0 || t.To != 0) && t.To <= t.From {
		return nil, fmt.Errorf("field to: %w: time range ends before it starts", ErrMalformed)
	}
	b = append(b, tombstoneBodyVersion)
	b = appendStrs(b, t.Chunks)
	b = appendStr(b, t.Session)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.From))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.To))
	return appendStr(b, t.Reason), nil
}

func (g *ShareGrant) appendTo(b []byte, _ *Header) ([]byte, error) {
	if g.Grantee == "" {
		return nil, fmt.Errorf("field grantee: %w: empty", ErrMalformed)
	}
	if len(g.OwnKey) != 0 && len(g.OwnKey) != ShareKeySize {
		return nil, fmt.Errorf("field own key: %w: %d bytes", ErrMalformed, len(g.OwnKey))
	}
	// v3 when the DEKs are left to disclosures (Seqs), else v1 when
	// nothing of v2 is set: every body has one encoding.
	v3 := len(g.Seqs) != 0
	v2 := !v3 && (g.Follow || g.Note != "" || len(g.OwnKey) != 0)
	switch {
	case v3 && len(g.Keys) != 0:
		return nil, fmt.Errorf("field keys: %w: a grant with seqs carries no keys", ErrMalformed)
	case v3 && len(g.Chunks) != len(g.Seqs):
		return nil, fmt.Errorf("field seqs: %w: %d seqs for %d chunks", ErrMalformed, len(g.Seqs), len(g.Chunks))
	case v3 && len(g.OwnKey) != ShareKeySize:
		return nil, fmt.Errorf("field own key: %w: a grant with seqs needs its share key", ErrMalformed)
	case v3:
		b = append(b, grantBodyVersion3)
	case v2:
		b = append(b, grantBodyVersion2)
	default:
		b = append(b, grantBodyVersion)
	}
	b = appendStr(b, g.Grantee)
	b = appendStr(b, string(g.ShareKey))
	b = appendStrs(b, g.Sessions)
	b = appendStrs(b, g.Chunks)
	if v3 {
		b = binary.AppendUvarint(b, uint64(len(g.Seqs)))
		for i, q := range g.Seqs {
			if q == 0 || (i > 0 && q <= g.Seqs[i-1]) {
				return nil, fmt.Errorf("field seqs: %w: not ascending from 1", ErrMalformed)
			}
			b = binary.LittleEndian.AppendUint64(b, q)
		}
	} else {
		b = appendKeys(b, g.Keys)
	}
	if !v2 && !v3 {
		return b, nil
	}
	var flags byte
	if g.Follow {
		flags |= grantFollow
	}
	b = append(b, flags)
	b = appendStr(b, g.Note)
	return appendStr(b, string(g.OwnKey)), nil
}

func (r *ShareRevoke) appendTo(b []byte, _ *Header) ([]byte, error) {
	b = append(b, revokeBodyVersion)
	b = append(b, r.Grant[:]...)
	b = appendStr(b, r.Grantee)
	return appendStr(b, r.Reason), nil
}

func (r *Rekey) appendTo(b []byte, _ *Header) ([]byte, error) {
	if r.Epoch == 0 {
		return nil, fmt.Errorf("field epoch: %w: 0", ErrMalformed)
	}
	b = append(b, rekeyBodyVersion)
	b = binary.LittleEndian.AppendUint32(b, r.Epoch)
	return appendKeys(b, r.Keys), nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrs(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

func appendKeys(b []byte, ks []WrappedKey) []byte {
	b = binary.AppendUvarint(b, uint64(len(ks)))
	for _, k := range ks {
		b = binary.LittleEndian.AppendUint64(b, k.Seq)
		b = append(b, k.Wrapped[:]...)
	}
	return b
}

// DecodeBody parses a plaintext body of type t in an event with header hdr.
func DecodeBody(t Type, p []byte, hdr *Header) (Body, error) {
	return decodeBody(t, p, hdr, false)
}

// decodeBody is DecodeBody; with alias, the content of a store or edit
// body points into p instead of copying it: the caller hands p over,
// never to change it again. Only the content: it is most of p, so keeping
// it keeps little else, where a kept session or chunk id string sharing p
// would pin the whole body.
func decodeBody(t Type, p []byte, hdr *Header, alias bool) (Body, error) {
	return decodeBodyIn(t, p, hdr, alias, nil)
}

// decodeBodyIn is decodeBody taking the session and role strings of a
// store body from in when they equal the last ones seen there (nil: no
// cache). A replay worker keeps one: consecutive events mostly share both.
func decodeBodyIn(t Type, p []byte, hdr *Header, alias bool, in *strCache) (Body, error) {
	return decodeBodyInto(t, p, hdr, alias, in, nil)
}

// decodeBodyInto is decodeBodyIn decoding a store body into s (nil: a new
// Store), which the caller allocated with the event that holds it, or
// cleared: s must be the zero Store.
func decodeBodyInto(t Type, p []byte, hdr *Header, alias bool, in *strCache, s *Store) (Body, error) {
	return decodeBodyCheck(t, p, hdr, alias, in, s, false)
}

// decodeBodyCheck is decodeBodyInto; with check (the caller drops the
// body: verify, import), a store body's chunk id is left empty when it
// is the default one, the event id's hex, instead of made (an allocation
// an event). Everything is checked as without.
func decodeBodyCheck(t Type, p []byte, hdr *Header, alias bool, in *strCache, s *Store, check bool) (Body, error) {
	d := &dec{b: p, alias: alias && (t == TypeStore || t == TypeEdit), in: in, into: s, check: check && t == TypeStore}
	var body Body
	switch t {
	case TypeStore:
		body = d.store(hdr)
	case TypeTombstone:
		body = d.tombstone()
	case TypeShareGrant:
		body = d.grant()
	case TypeShareRevoke:
		body = d.revoke()
	case TypeRekey:
		body = d.rekey()
	case TypeEdit:
		body = d.edit(hdr)
	default:
		return nil, fmt.Errorf("decode body: %w: %d", ErrUnknownType, t)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode %s body: %w", t, d.err)
	}
	return body, nil
}

type dec struct {
	b   []byte
	err error
	// alias: the content string shares b's bytes (decodeBody)
	alias bool
	in    *strCache // may be nil
	into  *Store    // where store() decodes (nil: a new Store)
	check bool      // a store body only checked: no default chunk id made
}

// strCache holds the last session and role strings a decoder made, so
// that the next equal ones are not allocated again (two of a replayed
// event's allocations), and the room its default chunk ids are made in.
type strCache struct {
	session, role string
	// ids is what is left of the last slab of default chunk ids (the
	// event id's hex): a replay made one 32-byte string an event, 5% of
	// its CPU with the collector's share (issue 26). A kept id keeps its
	// slab (idSlab bytes) alive, as a kept content keeps its event.
	ids []byte
}

// idSlab is the size of one slab of chunk ids: 32 of them.
const idSlab = 32 * 2 * IDSize

// hexID returns id's hex, carved from c's slab.
func (c *strCache) hexID(id ID) string {
	if len(c.ids) < 2*IDSize {
		c.ids = make([]byte, idSlab)
	}
	b := c.ids[: 2*IDSize : 2*IDSize]
	c.ids = c.ids[2*IDSize:]
	hex.Encode(b, id[:])
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// isHexID reports whether s is id's hex (lower case, as ID.String),
// without making that string.
func isHexID(s string, id ID) bool {
	var hx [2 * IDSize]byte
	hex.Encode(hx[:], id[:])
	return s == string(hx[:])
}

// cached reads a string, returning *last instead of a new one when equal
// (and remembering a new one in it).
func (d *dec) cached(last *string) string {
	b := d.lenBytes()
	if d.err != nil {
		return ""
	}
	if string(b) == *last { // compared without a copy
		return *last
	}
	*last = string(b)
	return *last
}

// lenBytes reads a length-prefixed run of bytes (a string's), sharing d.b.
func (d *dec) lenBytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("string of %d bytes past end", n)
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *dec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, a...)...)
	}
}

func (d *dec) byte1() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail("short body")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) version(want byte) {
	if v := d.byte1(); d.err == nil && v != want {
		d.err = fmt.Errorf("%w: body version %d (this build reads %d)", ErrUnsupportedVersion, v, want)
	}
}

func (d *dec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string { return d.strAlias(false) }

// content reads the content string, sharing d.b's bytes when d.alias.
func (d *dec) content() string { return d.strAlias(d.alias) }

func (d *dec) strAlias(alias bool) string {
	b := d.lenBytes()
	if d.err != nil {
		return ""
	}
	if alias {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return string(b)
}

func (d *dec) count(minSize int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/minSize) {
		d.fail("count %d past end", n)
		return 0
	}
	return int(n)
}

func (d *dec) strs() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *dec) fixed(n int) []byte {
	if d.err != nil || len(d.b) < n {
		d.fail("short body")
		return make([]byte, n)
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u64() uint64 { return binary.LittleEndian.Uint64(d.fixed(8)) }

func (d *dec) keys() []WrappedKey {
	n := d.count(8 + WrappedKeySize)
	if n == 0 {
		return nil
	}
	out := make([]WrappedKey, n)
	for i := range out {
		out[i].Seq = d.u64()
		copy(out[i].Wrapped[:], d.fixed(WrappedKeySize))
	}
	return out
}

func (d *dec) store(hdr *Header) *Store {
	s := d.into // zero (decodeBodyInto)
	if s == nil {
		s = &Store{}
	}
	v := d.byte1()
	if d.err == nil && v != storeBodyVersion && v != storeBodyV2 {
		d.err = fmt.Errorf("%w: body version %d (this build reads 1 and 2)", ErrUnsupportedVersion, v)
	}
	flags := d.byte1()
	switch {
	case v == storeBodyVersion && flags&^storeFlagsAll != 0, v == storeBodyV2 && flags&^storeFlagsV2 != 0:
		d.fail("unknown store flags %#x", flags)
	case v == storeBodyV2 && flags&^storeFlagsAll == 0:
		d.fail("non-canonical store version 2 without version 2 fields")
	}
	s.Kind = Kind(d.byte1())
	if !knownKinds[s.Kind] && d.err == nil {
		d.fail("unknown kind %d", s.Kind)
	}
	if d.in != nil {
		s.Session, s.Role = d.cached(&d.in.session), d.cached(&d.in.role)
	} else {
		s.Session, s.Role = d.str(), d.str()
	}
	s.Content = d.content()
	s.Time = hdr.Time
	if flags&flagChunkID != 0 {
		s.ChunkID = d.str()
		if d.err == nil && (s.ChunkID == "" || isHexID(s.ChunkID, hdr.ID)) {
			d.fail("non-canonical chunk id")
		}
	} else if !d.check {
		if d.in != nil {
			s.ChunkID = d.in.hexID(hdr.ID)
		} else {
			s.ChunkID = hdr.ID.String()
		}
	}
	if flags&flagParent != 0 {
		if s.Parent = d.str(); d.err == nil && s.Parent == "" {
			d.fail("non-canonical parent")
		}
	}
	if flags&flagChunkParent != 0 {
		s.ChunkParent = d.str()
		s.ChunkIndex = int(d.uvarint())
		if d.err == nil && (s.ChunkIndex < 0 || s.ChunkIndex > 1<<31 || (s.ChunkParent == "" && s.ChunkIndex == 0)) {
			d.fail("bad chunk index")
		}
	}
	if flags&flagMeta != 0 {
		n := d.count(2)
		if n == 0 && d.err == nil {
			d.fail("non-canonical empty meta")
		}
		s.Meta = make(map[string]string, n)
		prev := ""
		for i := 0; i < n && d.err == nil; i++ {
			k, v := d.str(), d.str()
			if i > 0 && k <= prev {
				d.fail("meta keys not sorted and unique")
			}
			prev = k
			s.Meta[k] = v
		}
	}
	if flags&flagTime != 0 {
		s.Time = int64(d.u64())
		if d.err == nil && s.Time == hdr.Time {
			d.fail("non-canonical content time")
		}
	}
	d.conv(s, flags)
	return s
}

func (d *dec) tombstone() *Tombstone {
	t := &Tombstone{}
	d.version(tombstoneBodyVersion)
	t.Chunks = d.strs()
	t.Session = d.str()
	t.From, t.To = int64(d.u64()), int64(d.u64())
	t.Reason = d.str()
	return t
}

func (d *dec) grant() *ShareGrant {
	g := &ShareGrant{}
	v := d.byte1()
	if d.err == nil && v != grantBodyVersion && v != grantBodyVersion2 && v != grantBodyVersion3 {
		d.err = fmt.Errorf("%w: body version %d (this build reads %d to %d)", ErrUnsupportedVersion, v, grantBodyVersion, grantBodyVersion3)
	}
	g.Grantee = d.str()
	g.ShareKey = []byte(d.str())
	g.Sessions = d.strs()
	g.Chunks = d.strs()
	if v == grantBodyVersion3 {
		n := d.count(8)
		if d.err == nil && n == 0 {
			d.fail("v3 grant without seqs")
		}
		if d.err == nil && n != len(g.Chunks) {
			d.fail("v3 grant with %d seqs for %d chunks", n, len(g.Chunks))
		}
		for i := 0; i < n && d.err == nil; i++ {
			q := d.u64()
			if d.err == nil && (q == 0 || (i > 0 && q <= g.Seqs[i-1])) {
				d.fail("grant seqs not ascending from 1")
			}
			g.Seqs = append(g.Seqs, q)
		}
	} else {
		g.Keys = d.keys()
	}
	if v == grantBodyVersion || d.err != nil {
		return g
	}
	flags := d.byte1()
	if d.err == nil && flags&^grantFollow != 0 {
		d.fail("unknown grant flags %#x", flags)
	}
	g.Follow = flags&grantFollow != 0
	g.Note = d.str()
	if k := d.str(); len(k) != 0 {
		g.OwnKey = []byte(k)
	}
	switch {
	case d.err != nil:
	case len(g.OwnKey) != 0 && len(g.OwnKey) != ShareKeySize:
		d.fail("own key of %d bytes", len(g.OwnKey))
	case v == grantBodyVersion3 && len(g.OwnKey) == 0:
		d.fail("v3 grant without its share key")
	case v == grantBodyVersion2 && !g.Follow && g.Note == "" && len(g.OwnKey) == 0:
		d.fail("non-canonical v2 grant without v2 fields")
	}
	return g
}

func (d *dec) revoke() *ShareRevoke {
	r := &ShareRevoke{}
	d.version(revokeBodyVersion)
	copy(r.Grant[:], d.fixed(IDSize))
	r.Grantee = d.str()
	r.Reason = d.str()
	return r
}

func (d *dec) rekey() *Rekey {
	r := &Rekey{}
	d.version(rekeyBodyVersion)
	r.Epoch = uint32(binary.LittleEndian.Uint32(d.fixed(4)))
	r.Keys = d.keys()
	return r
}

// Event is a verified, decrypted event.
type Event struct {
	Header
	Hash Hash
	Body Body
}

// Store returns the body as *Store, or nil.
func (e *Event) Store() *Store { s, _ := e.Body.(*Store); return s }

// Tombstone returns the body as *Tombstone, or nil.
func (e *Event) Tombstone() *Tombstone { t, _ := e.Body.(*Tombstone); return t }

// MarshalJSON renders an event as one replay line: header fields first,
// then the body's fields, in a fixed order.
func (e *Event) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Seq  uint64 `json:"seq"`
		Time string `json:"time"`
		Type string `json:"type"`
		ID   string `json:"id"`
		Hash string `json:"hash"`
		Prev string `json:"prev"`
	}{e.Seq, FormatTime(e.Time), e.Type.String(), e.ID.String(), e.Hash.String(), e.Prev.String()})
	if err != nil || e.Body == nil {
		return head, err
	}
	var body any = e.Body
	if s := e.Store(); s != nil {
		body = struct {
			ChunkID     string            `json:"chunk_id"`
			Session     string            `json:"session,omitempty"`
			Role        string            `json:"role,omitempty"`
			Kind        Kind              `json:"kind"`
			ContentTime string            `json:"content_time"`
			Content     string            `json:"content"`
			Meta        map[string]string `json:"meta,omitempty"`
			Parent      string            `json:"parent,omitempty"`
			ChunkParent string            `json:"chunk_parent,omitempty"`
			ChunkIndex  *int              `json:"chunk_index,omitempty"`
			Tool        *ToolCall         `json:"tool,omitempty"`
			Supersedes  []string          `json:"supersedes,omitempty"`
		}{s.ChunkID, s.Session, s.Role, s.Kind, FormatTime(s.Time), s.Content, s.Meta, s.Parent, s.ChunkParent, chunkIndexPtr(s), s.Tool, s.Supersedes}
	}
	if ed := e.Edit(); ed != nil {
		body = editJSON(ed)
	}
	bb, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	if len(bb) <= 2 {
		return head, nil
	}
	return append(append(head[:len(head)-1], ','), bb[1:]...), nil
}

func chunkIndexPtr(s *Store) *int {
	if s.ChunkParent == "" {
		return nil
	}
	i := s.ChunkIndex
	return &i
}

// FormatTime renders unix ms as RFC 3339 UTC with milliseconds.
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// MarshalText renders the hash as hex (JSON, logs).
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText parses hex.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := ParseHash(string(b))
	*h = v
	return err
}

// MarshalText renders the id as hex.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses hex.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	*id = v
	return err
}
