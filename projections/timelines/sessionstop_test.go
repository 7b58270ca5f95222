package timelines

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
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
	defer func(v int) { sessionsDropEvery = v }(sessionsDropEvery)
	for _, every := range []int{0, 1, 3} { // letting the pages go changes nothing
		sessionsDropEvery = every
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
				t.Errorf("drop every %d, SessionsTop(%d):\n got %+v\nwant %+v", every, n, got, w)
			}
		}
	}
}

// SessionsTop lets go of the sessions bucket's pages as it reads them: a
// listing of the 5 most recent of 3,000 sessions ends with a fraction of
// the pages mapped that it ends with when it keeps them.
func TestSessionsTopLetsPagesGo(t *testing.T) {
	var bodies []log.Body
	for i := 0; i < 3000; i++ {
		bodies = append(bodies, conv(fmt.Sprintf("c%d", i), fmt.Sprintf("session-%05d", i), "user", int64(i+1)*1000, strings.Repeat("a title long enough to fill the record. ", 3)))
	}
	dir := t.TempDir()
	tl := open(t, dir)
	defer tl.Close()
	applyCommit(t, tl, chain(t, bodies...))
	resident := func(every int) int64 {
		t.Helper()
		defer func(v int) { sessionsDropEvery = v }(sessionsDropEvery)
		sessionsDropEvery = every
		var kb int64
		err := tl.read(func(tx *bolt.Tx) error {
			projections.DropResident(tx.DB(), tx.Size()) // start from none
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		ss, err := tl.SessionsTop(5)
		if err != nil || len(ss) != 5 || ss[0].ID != "session-02999" {
			t.Fatalf("SessionsTop(5): %+v %v", ss, err)
		}
		if err := fsutil.Smaps("/proc/self", func(e fsutil.SmapsEntry) {
			if strings.HasSuffix(e.Path, "/"+FileName) && strings.HasPrefix(e.Path, dir) {
				kb += e.RssKB
			}
		}); errors.Is(err, fs.ErrNotExist) {
			t.Skip(err) // no /proc here
		} else if err != nil {
			t.Fatal(err)
		}
		return kb
	}
	kept, dropped := resident(0), resident(64)
	if kept < 64 || dropped*4 > kept {
		t.Errorf("resident after listing: %d kB keeping the pages, %d kB letting them go every 64 records; want under a quarter", kept, dropped)
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
