package timelines

import (
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

func TestAround(t *testing.T) {
	evs := chain(t,
		conv("a3", "A", "user", 3000, "three"),
		conv("a1", "A", "user", 1000, "one"),
		conv("a2", "A", "assistant", 2000, "two"),
		&log.Store{ChunkID: "t1", Kind: log.KindToolCall, Session: "A", Role: "tool", Time: 2500, Content: "tool"},
		conv("a4", "A", "assistant", 4000, "four"),
		conv("a5", "A", "user", 5000, "five"),
		conv("b1", "B", "user", 2000, "other session"),
		&log.Store{ChunkID: "k1", Kind: log.KindKnowledge, Time: 100, Content: "sessionless"},
		&log.Tombstone{Chunks: []string{"a4"}},
	)
	tl := open(t, t.TempDir())
	defer tl.Close()
	applyCommit(t, tl, evs)
	ids := func(cs []Chunk) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		id            string
		before, after int
		want          string
	}{
		{"a3", 1, 1, "a2,a5"},    // tool call skipped, tombstoned a4 gone
		{"a3", 2, 2, "a1,a2,a5"}, // clipped at the session's start and end
		{"a1", 5, 0, ""},         // nothing before the first turn
		{"a2", 0, 1, "a3"},       // only after
		{"a5", 3, 0, "a1,a2,a3"}, // oldest first
		{"b1", 1, 1, ""},         // alone in its session
		{"k1", 1, 1, ""},         // no session
		{"nope", 1, 1, ""},       // unknown id
		{"a4", 1, 1, ""},         // tombstoned
		{"a3", 0, 0, ""},         // nothing asked
	} {
		got, err := tl.Around(tc.id, tc.before, tc.after)
		if err != nil {
			t.Fatalf("Around(%s): %v", tc.id, err)
		}
		if ids(got) != tc.want {
			t.Errorf("Around(%s, %d, %d) = %q, want %q", tc.id, tc.before, tc.after, ids(got), tc.want)
		}
	}
}
