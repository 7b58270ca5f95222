package timelines

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	bolt "go.etcd.io/bbolt"
)

// SessionsTop(n) is the first n of every session record decoded whole and
// sorted by last content time (latest first), ties by id: for each n,
// with ties on the last time, ids JSON writes with escapes (which the
// order key leaves to encoding/json), negative times, and keys that come
// in the bucket in the reverse of the listing's order and in the same.
func TestSessionsTopIsFirstOfSorted(t *testing.T) {
	var bodies []log.Body
	ids := []string{"a", "b", "c<d", `q"uote`, "back\\slash", "é", "s10", "s09", "z", "tab\t"}
	times := []int64{5000, 5000, -3000, 7000, 5000, 100, 9000, 9000, 1, 7000}
	for i, id := range ids {
		for j := 0; j < 3; j++ {
			bodies = append(bodies, conv(fmt.Sprintf("c%d-%d", i, j), id, "user", times[i]-int64(j)*10, "turn."))
		}
	}
	tl := open(t, t.TempDir())
	defer tl.Close()
	applyCommit(t, tl, chain(t, bodies...))

	var want []SessionInfo
	err := tl.read(func(tx *bolt.Tx) error {
		return tx.Bucket(bSessions).ForEach(func(k, v []byte) error {
			_, si, err := decodeSession(v)
			want = append(want, si)
			return err
		})
	})
	if err != nil || len(want) != len(ids) {
		t.Fatalf("sessions bucket: %d records, %v", len(want), err)
	}
	sort.Slice(want, func(i, j int) bool {
		if want[i].Last != want[j].Last {
			return want[i].Last > want[j].Last
		}
		return want[i].ID < want[j].ID
	})
	for n := 0; n <= len(ids)+1; n++ {
		got, err := tl.SessionsTop(n)
		if err != nil {
			t.Fatal(err)
		}
		w := want
		if n > 0 && n < len(w) {
			w = w[:n]
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("SessionsTop(%d):\n got %+v\nwant %+v", n, got, w)
		}
	}
}

// The order key read from the front of a record is what decoding the
// whole record gives, and a record it cannot read is an error.
func TestSessionOrderKey(t *testing.T) {
	for _, si := range []SessionInfo{
		{ID: "plain", Last: 12345, First: -7},
		{ID: "esc<>&\"\\\n", Last: -99},
		{ID: "", Last: 0},
		{ID: "c<d", Last: 3}, // written "c\u003cd"
		{ID: "back\\slash\t", Last: 4},
		{ID: "é😀", Last: 1 << 62, Kinds: map[string]int{"conversation": 2}, Title: "t"},
	} {
		rec, err := encodeSession("title", &si)
		if err != nil {
			t.Fatal(err)
		}
		id, last, err := sessionOrderKey(sessionJSON(rec))
		if err != nil || id != si.ID || last != si.Last {
			t.Errorf("%+v: got %q %d %v", si, id, last, err)
		}
	}
	for _, bad := range []string{"", `{"id":"x","first_ms":1,"last_ms":`, `{"id":"x","first_ms":1,"last_ms":2x}`, `[1]`} {
		if _, _, err := sessionOrderKey([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
