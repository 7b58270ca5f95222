package mirror

import (
	"errors"
	"github.com/unlimitedcontext/ucl/arweave"
	"math"
	"strings"
	"testing"
)

func TestTagsRoundTripAndBudget(t *testing.T) {
	var logID [16]byte
	var head Hash
	for i := range head {
		head[i] = 0xFF
	}
	for _, m := range []SegmentMeta{
		{Kind: KindSegment, LogID: logID, FirstSeq: 1, LastSeq: 1, HeadHash: head},
		{Kind: KindSnapshot, LogID: testLogID, FirstSeq: math.MaxUint64 - 1, LastSeq: math.MaxUint64, HeadHash: head},
		// A grantee is an Arweave address: 43 characters.
		{Kind: KindGrant, LogID: testLogID, FirstSeq: math.MaxUint64, LastSeq: math.MaxUint64, HeadHash: head, Grantee: strings.Repeat("x", 43)},
	} {
		tags := m.Tags()
		if n := arweave.TagBytes(tags); n >= arweave.MaxTagBytes/2 {
			t.Fatalf("%s tags take %d bytes; budget is %d (keep well under)", m.Kind, n, arweave.MaxTagBytes)
		}
		got, err := ParseTags(tags)
		if err != nil {
			t.Fatal(err)
		}
		if got != m {
			t.Fatalf("round trip: got %+v want %+v", got, m)
		}
	}
}

func TestParseTagsRejects(t *testing.T) {
	good := SegmentMeta{Kind: KindSegment, LogID: testLogID, FirstSeq: 3, LastSeq: 9}.Tags()
	set := func(name, value string) []arweave.Tag {
		out := append([]arweave.Tag(nil), good...)
		for i := range out {
			if out[i].Name == name {
				out[i].Value = value
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		tags []arweave.Tag
	}{
		{"other app", set(TagAppName, "Other")},
		{"bad kind", set(TagKind, "blob")},
		{"short log id", set(TagLogID, "abcd")},
		{"bad first", set(TagSeqFirst, "x")},
		{"last before first", set(TagSeqLast, "2")},
		{"bad head", set(TagHeadHash, "zz")},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseTags(tc.tags); !errors.Is(err, arweave.ErrTags) {
				t.Fatalf("err = %v, want ErrTags", err)
			}
		})
	}
}

func FuzzParseTags(f *testing.F) {
	m := SegmentMeta{Kind: KindGrant, LogID: testLogID, FirstSeq: 2, LastSeq: 5, Grantee: "g"}
	var vals []string
	for _, t := range m.Tags() {
		vals = append(vals, t.Value)
	}
	f.Add(strings.Join(vals, "\x00"))
	f.Fuzz(func(t *testing.T, s string) {
		parts := strings.Split(s, "\x00")
		names := []string{TagAppName, TagAppVersion, TagContentType, TagSchemaVersion, TagLogID, TagSeqFirst, TagSeqLast, TagHeadHash, TagKind, TagGrantee}
		var tags []arweave.Tag
		for i, p := range parts {
			tags = append(tags, arweave.Tag{Name: names[i%len(names)], Value: p})
		}
		got, err := ParseTags(tags)
		if err != nil {
			if !errors.Is(err, arweave.ErrTags) {
				t.Fatalf("error %v is not ErrTags", err)
			}
			return
		}
		again, err := ParseTags(got.Tags())
		if err != nil || again != got {
			t.Fatalf("re-parse: %+v %v", again, err)
		}
	})
}
