package mirror

import (
	"encoding/hex"
	"fmt"
	"github.com/unlimitedcontext/ucl/arweave"
	"strconv"
)

// Tag names and fixed values (DESIGN.md §5). Do not change: readers search
// for them.
const (
	TagAppName       = "App-Name"
	TagAppVersion    = "App-Version"
	TagContentType   = "Content-Type"
	TagSchemaVersion = "UC-Schema-Version"
	TagLogID         = "UC-Log-Id"
	TagSeqFirst      = "UC-Seq-First"
	TagSeqLast       = "UC-Seq-Last"
	TagHeadHash      = "UC-Head-Hash"
	TagKind          = "UC-Kind"
	TagGrantee       = "UC-Grantee"

	AppName            = "UnlimitedContext"
	SegmentContentType = "application/x-ucl-segment"
	// SchemaVersion is the value of UC-Schema-Version: the segment format
	// version as a decimal string.
	SchemaVersion = "1"
)

// Kind is the value of the UC-Kind tag.
type Kind string

// Kinds of uploads.
const (
	KindSegment  Kind = "segment"
	KindSnapshot Kind = "snapshot"
	KindGrant    Kind = "grant"
)

// AppVersion is the App-Version tag value; the CLI may set it at start-up.
var AppVersion = "0.1.0"

// SegmentMeta is what the tags say about an upload.
type SegmentMeta struct {
	Kind     Kind
	LogID    [16]byte
	FirstSeq uint64
	LastSeq  uint64
	HeadHash Hash
	Grantee  string // only for KindGrant
}

// Tags returns the tags for m in a fixed order.
func (m SegmentMeta) Tags() []arweave.Tag {
	tags := []arweave.Tag{
		{Name: TagAppName, Value: AppName},
		{Name: TagAppVersion, Value: AppVersion},
		{Name: TagContentType, Value: SegmentContentType},
		{Name: TagSchemaVersion, Value: SchemaVersion},
		{Name: TagLogID, Value: hex.EncodeToString(m.LogID[:])},
		{Name: TagSeqFirst, Value: strconv.FormatUint(m.FirstSeq, 10)},
		{Name: TagSeqLast, Value: strconv.FormatUint(m.LastSeq, 10)},
		{Name: TagHeadHash, Value: hex.EncodeToString(m.HeadHash[:])},
		{Name: TagKind, Value: string(m.Kind)},
	}
	if m.Grantee != "" {
		tags = append(tags, arweave.Tag{Name: TagGrantee, Value: m.Grantee})
	}
	return tags
}

// Upload returns data tagged with m, for an arweave.Uploader.
func (m SegmentMeta) Upload(data []byte) arweave.Upload {
	return arweave.Upload{Name: fmt.Sprintf("%s %d..%d", m.Kind, m.FirstSeq, m.LastSeq), Tags: m.Tags(), Data: data}
}

// ParseTags reads SegmentMeta from tags. Unknown tags are ignored.
func ParseTags(tags []arweave.Tag) (SegmentMeta, error) {
	var m SegmentMeta
	get := map[string]string{}
	for _, t := range tags {
		if _, dup := get[t.Name]; !dup {
			get[t.Name] = t.Value
		}
	}
	if get[TagAppName] != AppName {
		return m, fmt.Errorf("parse tags: %w: App-Name %q", arweave.ErrTags, get[TagAppName])
	}
	m.Kind = Kind(get[TagKind])
	switch m.Kind {
	case KindSegment, KindSnapshot, KindGrant:
	default:
		return m, fmt.Errorf("parse tags: %w: UC-Kind %q", arweave.ErrTags, m.Kind)
	}
	id, err := hex.DecodeString(get[TagLogID])
	if err != nil || len(id) != 16 {
		return m, fmt.Errorf("parse tags: %w: UC-Log-Id %q", arweave.ErrTags, get[TagLogID])
	}
	copy(m.LogID[:], id)
	if m.FirstSeq, err = strconv.ParseUint(get[TagSeqFirst], 10, 64); err != nil {
		return m, fmt.Errorf("parse tags: %w: UC-Seq-First %q", arweave.ErrTags, get[TagSeqFirst])
	}
	if m.LastSeq, err = strconv.ParseUint(get[TagSeqLast], 10, 64); err != nil || m.LastSeq < m.FirstSeq {
		return m, fmt.Errorf("parse tags: %w: UC-Seq-Last %q", arweave.ErrTags, get[TagSeqLast])
	}
	hh, err := hex.DecodeString(get[TagHeadHash])
	if err != nil || len(hh) != 32 {
		return m, fmt.Errorf("parse tags: %w: UC-Head-Hash %q", arweave.ErrTags, get[TagHeadHash])
	}
	copy(m.HeadHash[:], hh)
	m.Grantee = get[TagGrantee]
	return m, nil
}

// LogIDHex returns the UC-Log-Id value for id.
func LogIDHex(id [16]byte) string { return hex.EncodeToString(id[:]) }
