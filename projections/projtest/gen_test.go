package projtest

import (
	"crypto/sha256"
	"reflect"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
)

func TestEventsDeterministicAndChained(t *testing.T) {
	a, b := Events(42, 2000), Events(42, 2000)
	if len(a) != 2000 {
		t.Fatalf("%d events, want 2000", len(a))
	}
	if c := Events(43, 2000); c[len(c)-1].Hash == a[len(a)-1].Hash {
		t.Fatal("different seeds gave the same chain")
	}
	var prev log.Hash
	var hdr [log.HeaderSize]byte
	for i, ev := range a {
		if ev.Hash != b[i].Hash {
			t.Fatalf("seq %d: hash differs between two generations", ev.Seq)
		}
		if ev.Seq != uint64(i+1) || ev.Prev != prev {
			t.Fatalf("seq %d at %d, prev linked: %v", ev.Seq, i, ev.Prev == prev)
		}
		body, err := log.EncodeBody(ev.Body, &ev.Header)
		if err != nil {
			t.Fatalf("seq %d: encode: %v", ev.Seq, err)
		}
		ev.Header.Encode(hdr[:])
		if sha256.Sum256(append(hdr[:], body...)) != ev.Hash {
			t.Fatalf("seq %d: hash is not SHA-256(header ‖ body)", ev.Seq)
		}
		// Bodies are in the form the log decoder produces.
		dec, err := log.DecodeBody(ev.Type, body, &ev.Header)
		if err != nil {
			t.Fatalf("seq %d: decode: %v", ev.Seq, err)
		}
		if !reflect.DeepEqual(dec, ev.Body) {
			t.Fatalf("seq %d: body does not round-trip:\n got %#v\nwant %#v", ev.Seq, dec, ev.Body)
		}
		prev = ev.Hash
	}
}

func TestEventsCoverEveryForm(t *testing.T) {
	counts := map[string]int{}
	seen := map[string]bool{}
	for _, ev := range Events(1, 3000) {
		counts[ev.Type.String()]++
		switch b := ev.Body.(type) {
		case *log.Store:
			counts["kind:"+b.Kind.String()]++
			if seen[b.ChunkID] {
				counts["re-stored id"]++
			}
			seen[b.ChunkID] = true
			if b.ChunkID == ev.ID.String() {
				counts["id from event id"]++
			}
			if b.Session == "" {
				counts["no session"]++
			}
			if b.Meta != nil {
				counts["meta"]++
			}
			if b.Parent != "" {
				counts["parent"]++
			}
			if b.ChunkParent != "" && b.ChunkIndex > 0 {
				counts["document part"]++
			}
			if n := len(textutil.Words(b.Content)); n < 40 || n > 80 {
				t.Errorf("seq %d: %d words", ev.Seq, n)
			}
		case *log.Tombstone:
			hasRange := b.From != 0 || b.To != 0
			switch {
			case len(b.Chunks) > 0:
				counts["tomb:ids"]++
			case b.Session != "" && hasRange:
				counts["tomb:session+range"]++
			case b.Session != "":
				counts["tomb:session"]++
			case hasRange:
				counts["tomb:range"]++
			}
		}
	}
	for _, k := range []string{"store", "tombstone", "share_grant", "share_revoke", "rekey",
		"kind:conversation", "kind:document", "kind:knowledge", "kind:tool_call",
		"re-stored id", "id from event id", "no session", "meta", "parent", "document part",
		"tomb:ids", "tomb:session+range", "tomb:session", "tomb:range"} {
		if counts[k] == 0 {
			t.Errorf("no %s in 3000 generated events (%v)", k, counts)
		}
	}
	live := Live(Events(1, 3000))
	dead := 0
	for _, ok := range live {
		if !ok {
			dead++
		}
	}
	if dead == 0 || dead == len(live) {
		t.Errorf("%d of %d chunks tombstoned: the stream does not exercise tombstones", dead, len(live))
	}
}

func TestStoreEventsAndText(t *testing.T) {
	for _, ev := range StoreEvents(5, 500) {
		if ev.Type != log.TypeStore {
			t.Fatalf("seq %d is a %s", ev.Seq, ev.Type)
		}
	}
	evs := StoreEvents(5, 500)
	if got := len(LiveIDs(evs)); got == 0 || got > 500 {
		t.Fatalf("%d live ids", got)
	}
	s := Events(5, 1)[0].Store().Content
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, "!") {
		t.Fatalf("text does not end a sentence: %q", s)
	}
}

func TestChainDefaults(t *testing.T) {
	evs, err := Chain(&log.Store{Kind: log.KindConversation, Content: "Hi."})
	if err != nil {
		t.Fatal(err)
	}
	st := evs[0].Store()
	if st.ChunkID != evs[0].ID.String() || st.Time != evs[0].Time {
		t.Fatalf("defaults not filled: %+v", st)
	}
	if _, err := Chain(&log.Store{Kind: log.KindConversation}); err == nil {
		t.Fatal("empty content accepted")
	}
}
