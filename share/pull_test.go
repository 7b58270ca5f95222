package share

import (
	"fmt"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// keepRejected keeps an old grant only when this pull rejected what it
// found of it, and never over events this pull verified differently.
func TestKeepRejectedScope(t *testing.T) {
	g1, g2 := log.ID{1}, log.ID{2}
	old := func() []*receivedLog {
		return []*receivedLog{{Grantor: "A", LogID: "L", raws: map[uint64][]byte{3: []byte("three"), 4: []byte("four")}, Grants: []receivedGrant{
			{Received: Received{Grant: g1, Seq: 5}, Keys: []receivedKey{{Seq: 3}}},
			{Received: Received{Grant: g2, Seq: 6}, Keys: []receivedKey{{Seq: 4}}},
		}}}
	}
	grants := func(logs []*receivedLog) (out []string) {
		for _, rl := range logs {
			for _, g := range rl.Grants {
				out = append(out, rl.Grantor+":"+g.Grant.String()[:2])
			}
		}
		return out
	}
	cases := []struct {
		name     string
		logs     []*receivedLog
		rejected []Rejected
		want     string
		kept     int
	}{
		{"nothing rejected: a grant no longer found is dropped", nil, nil, "[]", 0},
		{"another grantor rejected", nil, []Rejected{{Grantor: "C", Reason: "x"}}, "[]", 0},
		{"one grant rejected", nil, []Rejected{{Grantor: "A", Grant: g2.String(), Reason: "x"}}, "[A:02]", 1},
		{"the grantor's log rejected", nil, []Rejected{{Grantor: "A", Reason: "x"}}, "[A:01 A:02]", 2},
		{"a disclosure of unknown grantor rejected", nil, []Rejected{{TxID: "t", Reason: "x"}}, "[A:01 A:02]", 2},
		{"received again: the new state wins", []*receivedLog{{Grantor: "A", LogID: "L", raws: map[uint64][]byte{3: []byte("three")},
			Grants: []receivedGrant{{Received: Received{Grant: g1, Seq: 5, Status: "revoked"}, Keys: []receivedKey{{Seq: 3}}}}}},
			[]Rejected{{Grantor: "A", Reason: "x"}}, "[A:01 A:02]", 1},
		{"a forked grantor log: the old grant is not kept", []*receivedLog{{Grantor: "A", LogID: "L", raws: map[uint64][]byte{4: []byte("other")},
			Grants: []receivedGrant{{Received: Received{Grant: g1, Seq: 5}, Keys: []receivedKey{{Seq: 4}}}}}},
			[]Rejected{{Grantor: "A", Grant: g2.String(), Reason: "x"}}, "[A:01]", 0},
	}
	for _, tc := range cases {
		got, kept := keepRejected(tc.logs, old(), tc.rejected)
		if fmt.Sprint(grants(got)) != tc.want || kept != tc.kept {
			t.Errorf("%s: %v kept %d, want %s kept %d", tc.name, grants(got), kept, tc.want, tc.kept)
		}
	}
}
