package arweave

import (
	"errors"
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
		if n := TagBytes(tags); n >= MaxTagBytes/2 {
			t.Fatalf("%s tags take %d bytes; budget is %d (keep well under)", m.Kind, n, MaxTagBytes)
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
	set := func(name, value string) []Tag {
		out := append([]Tag(nil), good...)
		for i := range out {
			if out[i].Name == name {
				out[i].Value = value
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		tags []Tag
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
			if _, err := ParseTags(tc.tags); !errors.Is(err, ErrTags) {
				t.Fatalf("err = %v, want ErrTags", err)
			}
		})
	}
}
