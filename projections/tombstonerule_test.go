package projections_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every projection decides what a tombstone hides through
// projections.TombstoneMatches (which is log.Tombstone.Matches), never
// through a rule of its own or a direct call: a second door is where the
// projections would start to disagree about what is hidden.
func TestProjectionsUseOneTombstoneRule(t *testing.T) {
	direct := regexp.MustCompile(`\.Matches\(&log\.Store\{`)
	users := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		if direct.MatchString(src) && path != "projector.go" {
			t.Errorf("%s applies log.Tombstone.Matches directly: call projections.TombstoneMatches", path)
		}
		if strings.Contains(src, "TombstoneMatches(") {
			users[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"fts", "summary", "timelines", "projstd", "dedup"} {
		if !users[p] {
			t.Errorf("projection package %s does not use projections.TombstoneMatches", p)
		}
	}
}
