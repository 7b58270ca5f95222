package fts

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"testing"

	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"
	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// TestAnalysisReuseKeepsIndex: content analysis memory is reused from one
// executed batch to the next (analysisBuf) while scorch analyses a batch's
// documents on several goroutines. Built in batches of 16, the index's
// content postings (terms, chunks, frequencies) must be exactly what
// bleve's own "en" analysis of each chunk gives, and the keyword fields
// (shared between consecutive chunks) exactly each chunk's values.
func TestAnalysisReuseKeepsIndex(t *testing.T) {
	a := enAnalyzer(t)
	r := rand.New(rand.NewSource(7))
	x := openT(t, t.TempDir(), Options{BatchSize: 16})
	var e evs
	want := map[string]map[string]uint64{} // field\x00term -> chunk -> freq
	add := func(field, term, id string, freq uint64) {
		k := field + "\x00" + term
		if want[k] == nil {
			want[k] = map[string]uint64{}
		}
		want[k][id] = freq
	}
	roles := []string{"user", "assistant", ""}
	for i := 0; i < 1500; i++ {
		id := fmt.Sprintf("c%04d", i)
		text := projtest.TextZipf(r, 1+r.Intn(120), 2000)
		if i%7 == 0 {
			text += " Zoë’s café 東京 naïve"
		}
		session, role := fmt.Sprintf("s%d", i/37), roles[(i/5)%3]
		e.store(id, session, role, log.KindConversation, int64(i), text)
		f := document.NewTextFieldCustom(fieldContent, nil, []byte(text), index.IndexField, a)
		f.Analyze()
		for term, tf := range f.AnalyzedTokenFrequencies() {
			add(fieldContent, term, id, uint64(tf.Frequency()))
		}
		add(fieldSession, session, id, 0)
		add(fieldKind, log.KindConversation.String(), id, 0)
		if role != "" {
			add(fieldRole, role, id, 0)
		}
	}
	applyAll(t, x, e.out, 100)

	adv, err := x.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := map[string]map[string]uint64{}
	for _, field := range []string{fieldContent, fieldSession, fieldKind, fieldRole} {
		d, err := rd.FieldDict(field)
		if err != nil {
			t.Fatal(err)
		}
		var terms []string
		for {
			de, err := d.Next()
			if err != nil {
				t.Fatal(err)
			}
			if de == nil {
				break
			}
			terms = append(terms, de.Term)
		}
		d.Close()
		for _, term := range terms {
			tfr, err := rd.TermFieldReader(context.Background(), []byte(term), field, true, false, false)
			if err != nil {
				t.Fatal(err)
			}
			ps := map[string]uint64{}
			for {
				p, err := tfr.Next(nil)
				if err != nil {
					t.Fatal(err)
				}
				if p == nil {
					break
				}
				doc, err := rd.ExternalID(p.ID)
				if err != nil {
					t.Fatal(err)
				}
				ps[chunkOfDoc(t, x, doc)] = p.Freq
			}
			tfr.Close()
			if len(ps) > 0 {
				got[field+"\x00"+term] = ps
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("index holds %d field terms, want %d", len(got), len(want))
	}
	for k, w := range want {
		if g := got[k]; !maps.Equal(g, w) {
			t.Fatalf("postings of %q: got %d chunks, want %d (or other frequencies)", k, len(g), len(w))
		}
	}
}

// chunkOfDoc is the chunk id of index document doc (DocID), by its
// committed side-table record.
func chunkOfDoc(t *testing.T, x *Index, doc string) string {
	t.Helper()
	var id string
	err := x.db.View(func(tx *bolt.Tx) error {
		key, _, err := splitRecord(tx.Bucket(bucketDocs).Get([]byte(doc)))
		if err != nil {
			return err
		}
		var ok bool
		if id, ok = projections.IDOfKey(key); !ok {
			return fmt.Errorf("record at %x: chunk key %x", doc, key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}
