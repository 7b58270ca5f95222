package mcpserver

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestDocsListTools holds the tool lists of docs/mcp.md, doc.go and the
// README against the tool table: a tool added, renamed or hidden there
// and not in the docs fails here.
func TestDocsListTools(t *testing.T) {
	var want []string
	for _, e := range Tools() {
		if e.Exposed {
			want = append(want, e.Name)
		}
	}
	sort.Strings(want)
	for _, c := range []struct {
		file string
		row  *regexp.Regexp
	}{
		{"../../docs/mcp.md", regexp.MustCompile("(?m)^\\| `(uc_[a-z_]+)` \\|")},
		{"doc.go", regexp.MustCompile(`(?m)^//\t(uc_[a-z_]+) `)},
		{"../../README.md", regexp.MustCompile("`(uc_[a-z_]+)`")},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if c.file == "../../README.md" {
			// The list is the one sentence "Its tools (...)".
			_, after, _ := strings.Cut(string(b), "Its tools")
			list, _, _ := strings.Cut(after, ")")
			b = []byte(list)
		}
		var got []string
		for _, m := range c.row.FindAllStringSubmatch(string(b), -1) {
			got = append(got, m[1])
		}
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s lists the tools\n  %s\nthe table has\n  %s", c.file, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
}
