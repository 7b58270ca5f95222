package timelines

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/unlimitedcontext/ucl/log"
)

// The chunk record (value of the "chunks" bucket, key = chunk id), binary
// and without the content since version 4 (JSON before, content
// included: its field names, hex sums and decimal times were two thirds
// of the file, the content most of the rest). The content is read back
// from the event at seq (content.go). Strings are
// uvarint(len) ‖ bytes; every varint is minimal, meta keys are strictly
// increasing and nothing follows the sum, so a record has exactly one
// encoding (the digest covers the record bytes):
//
//	flags     u8    1 edited, 2 event id = chunk id (omitted), 4 tool
//	seq       uvarint
//	event id  [16]  the log.ID, unless flag 2
//	append_ms varint
//	time_ms   varint
//	kind      u8
//	session                                      string
//	role      u8 1+i for indexRoles[i] (version 5), else 0 ‖ string
//	meta      uvarint n ‖ n × (key, value)       strings, keys sorted
//	parent, chunk_parent                         strings
//	chunk_index varint
//	tool      name, args, status                 strings, only with flag 4
//	supersedes uvarint n ‖ n × string
//	edited_by string
//	order     uvarint
//	sum       [16]  Chunk.Sum (32 bytes before version 6)
const (
	recEdited  = 1
	recSelfID  = 2
	recTool    = 4
	recAllBits = recEdited | recSelfID | recTool
)

// encodeChunk returns c's record (c.Content is not part of it). It fails only on a chunk that did not
// come from Apply (an event id or sum that is not hex).
func encodeChunk(c *Chunk) ([]byte, error) {
	var flags byte
	if c.Edited {
		flags |= recEdited
	}
	if c.EventID == c.ID {
		flags |= recSelfID
	}
	if c.Tool != nil {
		flags |= recTool
	}
	sum, err := hex.DecodeString(c.Sum)
	if err != nil || len(sum) != sumSize {
		return nil, fmt.Errorf("encode chunk %q: sum %q is not %d hex digits", c.ID, c.Sum, 2*sumSize)
	}
	b := make([]byte, 0, 96+len(c.Session)+len(c.Role))
	b = append(b, flags)
	b = binary.AppendUvarint(b, c.Seq)
	if flags&recSelfID == 0 {
		id, err := log.ParseID(c.EventID)
		if err != nil {
			return nil, fmt.Errorf("encode chunk %q: %w", c.ID, err)
		}
		b = append(b, id[:]...)
	}
	b = binary.AppendVarint(b, c.AppendTime)
	b = binary.AppendVarint(b, c.Time)
	b = append(b, byte(c.Kind))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(c.Session)
	if r := roleCode(c.Role); r != 0 {
		b = append(b, r)
	} else {
		b = append(b, 0)
		str(c.Role)
	}
	keys := make([]string, 0, len(c.Meta))
	for k := range c.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		str(k)
		str(c.Meta[k])
	}
	str(c.Parent)
	str(c.ChunkParent)
	b = binary.AppendVarint(b, int64(c.ChunkIndex))
	if c.Tool != nil {
		str(c.Tool.Name)
		str(c.Tool.Args)
		str(c.Tool.Status)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Supersedes)))
	for _, s := range c.Supersedes {
		str(s)
	}
	str(c.EditedBy)
	b = binary.AppendUvarint(b, c.Order)
	return append(b, sum...), nil
}

// recReader reads a record, remembering the first failure.
type recReader struct {
	b   []byte
	bad bool
}

func (r *recReader) byte() byte {
	if len(r.b) < 1 {
		r.bad = true
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *recReader) bytes(n int) []byte {
	if len(r.b) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *recReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	return string(r.bytes(int(n)))
}

// decodeChunk decodes the record of chunk id (see encodeChunk).
func decodeChunk(id string, v []byte) (*Chunk, error) {
	r := &recReader{b: v}
	c := &Chunk{ID: id}
	flags := r.byte()
	if flags&^recAllBits != 0 {
		r.bad = true
	}
	c.Edited = flags&recEdited != 0
	c.Seq = r.uvarint()
	if flags&recSelfID != 0 {
		c.EventID = id
	} else if eid := r.bytes(log.IDSize); eid != nil {
		c.EventID = hex.EncodeToString(eid)
		if c.EventID == id {
			r.bad = true // would have been encoded with flag 2
		}
	}
	c.AppendTime = r.varint()
	c.Time = r.varint()
	c.Kind = log.Kind(r.byte())
	c.Session = r.str()
	switch code := r.byte(); {
	case code == 0:
		c.Role = r.str()
		if roleCode(c.Role) != 0 {
			r.bad = true // would have been encoded by its code
		}
	case int(code) <= len(indexRoles):
		c.Role = indexRoles[code-1]
	default:
		r.bad = true
	}
	if n := r.uvarint(); n > 0 && n <= uint64(len(r.b))/2 {
		c.Meta = make(map[string]string, n)
		prev := ""
		for i := uint64(0); i < n && !r.bad; i++ {
			k := r.str()
			if i > 0 && k <= prev {
				r.bad = true
			}
			c.Meta[k], prev = r.str(), k
		}
	} else if n > 0 {
		r.bad = true
	}
	c.Parent = r.str()
	c.ChunkParent = r.str()
	c.ChunkIndex = int(r.varint())
	if flags&recTool != 0 {
		c.Tool = &log.ToolCall{Name: r.str(), Args: r.str(), Status: r.str()}
	}
	if n := r.uvarint(); n > 0 && n <= uint64(len(r.b)) {
		c.Supersedes = make([]string, 0, n)
		for i := uint64(0); i < n && !r.bad; i++ {
			c.Supersedes = append(c.Supersedes, r.str())
		}
	} else if n > 0 {
		r.bad = true
	}
	c.EditedBy = r.str()
	c.Order = r.uvarint()
	c.Sum = hex.EncodeToString(r.bytes(sumSize))
	if r.bad || len(r.b) != 0 {
		return nil, fmt.Errorf("decode chunk %q: %w", id, ErrCorrupt)
	}
	return c, nil
}

// EncodeChunk returns the stored record of c (the value under its id in
// the "chunks" bucket), for tools and tests that inspect or damage the
// file on purpose.
func EncodeChunk(c *Chunk) ([]byte, error) { return encodeChunk(c) }

// DecodeChunk decodes the stored record of chunk id (see EncodeChunk).
func DecodeChunk(id string, v []byte) (*Chunk, error) { return decodeChunk(id, v) }

// The session record (value of the "sessions" bucket): the id of the
// chunk its title was taken from, then the SessionInfo as JSON:
//
//	uvarint len ‖ title chunk id ‖ JSON SessionInfo
//
// A recomputed session keeps its title without reading the content back
// when the title's chunk has not changed.
func encodeSession(titleID string, info *SessionInfo) ([]byte, error) {
	js, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	b := binary.AppendUvarint(nil, uint64(len(titleID)))
	b = append(b, titleID...)
	return append(b, js...), nil
}

// sessionJSON is the JSON part of a session record (encodeSession), past
// its title id; a record too short to hold one gives what JSON decoding
// then refuses.
func sessionJSON(v []byte) []byte {
	r := &recReader{b: v}
	if r.str(); r.bad {
		return nil
	}
	return r.b
}

func decodeSession(v []byte) (string, SessionInfo, error) {
	var info SessionInfo
	r := &recReader{b: v}
	titleID := r.str()
	if r.bad {
		return "", info, fmt.Errorf("decode session record: %w", ErrCorrupt)
	}
	if err := json.Unmarshal(r.b, &info); err != nil {
		return "", info, fmt.Errorf("decode session record: %w: %v", ErrCorrupt, err)
	}
	return titleID, info, nil
}
