package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// errorTranscript freezes what ucl answers to bad command lines and failed
// lookups: each "$ ucl ARGS" line is run on a fresh store and followed by
// its exit status, stdout and stderr, exactly. Regenerate after an
// intended change with UCL_UPDATE_GOLDEN=1 go test ./cmd/ucl -run Transcript.
const errorTranscript = "testdata/errors.txt"

func TestErrorTranscript(t *testing.T) {
	b, err := os.ReadFile(errorTranscript)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatal(errs)
	}
	var got strings.Builder
	ran := 0
	for _, ln := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(ln, "#") || (ln == "" && got.Len() == 0) {
			got.WriteString(ln + "\n")
			continue
		}
		if !strings.HasPrefix(ln, "$ ucl") {
			continue // an old answer: replaced by the new one below
		}
		args, err := splitArgs(strings.TrimPrefix(ln, "$ ucl"))
		if err != nil {
			t.Fatalf("%s: %v", ln, err)
		}
		out, errs, code := runCLI(t, dir, "", args...)
		fmt.Fprintf(&got, "%s\nexit %d\n", ln, code)
		if out != "" {
			fmt.Fprintf(&got, "stdout:\n%s", out)
		}
		if errs != "" {
			fmt.Fprintf(&got, "stderr:\n%s", errs)
		}
		got.WriteString("\n")
		ran++
	}
	if ran < 10 {
		t.Fatalf("only %d commands in %s", ran, errorTranscript)
	}
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(errorTranscript, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := string(b); got.String() != want {
		t.Errorf("the answers differ from %s (regenerate with UCL_UPDATE_GOLDEN=1 if intended):\n%s", errorTranscript, lineDiff(want, got.String()))
	}
}

// splitArgs splits a command line on spaces, keeping "double-quoted"
// words whole.
func splitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, has := false, false
	for _, r := range s {
		switch {
		case r == '"':
			in, has = !in, true
		case r == ' ' && !in:
			if has {
				out = append(out, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteRune(r)
			has = true
		}
	}
	if in {
		return nil, fmt.Errorf("unterminated quote")
	}
	if has {
		out = append(out, cur.String())
	}
	return out, nil
}

// lineDiff lists the first lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, a, c)
			shown++
		}
	}
	return b.String()
}
