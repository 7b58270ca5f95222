package share

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FuzzArea feeds loadArea arbitrary files of one grantor's log: it fails
// cleanly or reads an area that writeArea writes and loadArea reads back
// the same.
func FuzzArea(f *testing.F) {
	env, _, wb := grantor(f)
	r, g := grantS1(f, env, wb)
	rl := &receivedLog{Grantor: env.Address, LogID: fmt.Sprintf("%x", env.LogID), raws: map[uint64][]byte{}}
	rg := receivedGrant{Received: Received{Grant: r.ID, Chunks: []string{"c1", "c2"}}, ShareKey: g.ShareKey}
	for _, k := range disclosedKeys(f, env, g, 1, 2) {
		raw, err := env.Log.Raw(k.Seq)
		if err != nil {
			f.Fatal(err)
		}
		rl.raws[k.Seq] = raw
		rg.Keys = append(rg.Keys, receivedKey{Seq: k.Seq, Wrapped: k.Wrapped[:]})
	}
	rl.Grants = []receivedGrant{rg}
	dir := filepath.Join(f.TempDir(), areaDir)
	if err := writeArea(dir, []*receivedLog{rl}); err != nil {
		f.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, rl.Grantor, rl.LogID+".json"))
	if err != nil {
		f.Fatal(err)
	}
	evs, err := os.ReadFile(filepath.Join(dir, rl.Grantor, rl.LogID+".events"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(js, evs)
	f.Add(js, evs[:len(evs)/2])
	f.Add([]byte("{}"), []byte{})
	f.Add([]byte(`{"grants":[{"keys":[{"seq":1}]}]}`), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, js, evs []byte) {
		dir := filepath.Join(t.TempDir(), areaDir)
		if err := os.MkdirAll(filepath.Join(dir, "G"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "G", "L.json"), js, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "G", "L.events"), evs, 0o600); err != nil {
			t.Fatal(err)
		}
		area, err := loadArea(dir)
		if err != nil {
			return
		}
		for _, rl := range area {
			rl.Grantor, rl.LogID = "G", "L" // where it was read from
		}
		again := filepath.Join(t.TempDir(), areaDir)
		if err := writeArea(again, area); err != nil {
			t.Fatal(err)
		}
		back, err := loadArea(again)
		if err != nil {
			t.Fatalf("an area read does not read back: %v", err)
		}
		if len(back) != len(area) {
			t.Fatalf("%d logs read back as %d", len(area), len(back))
		}
		for i := range area {
			if len(back[i].raws) != len(area[i].raws) || len(back[i].Grants) != len(area[i].Grants) {
				t.Fatalf("log %d read back differs", i)
			}
			for seq, raw := range area[i].raws {
				if !bytes.Equal(back[i].raws[seq], raw) {
					t.Fatalf("event %d read back differs", seq)
				}
			}
		}
	})
}
