// Command fts5corpus puts SQLite FTS5 beside a `ucl query --mode bm25`
// process on the corpus of a ucl store: it indexes the "content" of each
// line of a JSONL file as `ucl append` reads it (the input of a
// BenchmarkCommands store: UCL_BENCH_WRITE writes it), with the schema of
// the peers' full-text figure, and answers one query per process as the
// peers' -ftsquery child does (the words OR-ed, ranked by bm25(), top 10).
// Give it the words ucl's analyzer keeps (stop words out) for the same
// query: FTS5 has no stop words.
//
//	fts5corpus build DIR FILE.jsonl
//	fts5corpus query DIR "go support group"
package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: fts5corpus build DIR FILE.jsonl | fts5corpus query DIR WORDS")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2], os.Args[3])
	case "query":
		err = query(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("unknown mode %q (build or query)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fts5corpus:", err)
		os.Exit(1)
	}
}

// build indexes the contents of the JSONL file in a transaction per 10K
// rows; it prints the number of rows.
func build(dir, path string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "fts.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=OFF",
		"CREATE VIRTUAL TABLE docs USING fts5(content, tokenize='porter unicode61')"} {
		if _, err := db.Exec(p); err != nil {
			return fmt.Errorf("sqlite %q: %w", p, err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	var tx *sql.Tx
	var st *sql.Stmt
	commit := func() error {
		if tx == nil {
			return nil
		}
		st.Close()
		err := tx.Commit()
		tx, st = nil, nil
		return err
	}
	for sc.Scan() {
		var ev struct{ Content string }
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("line %d: %w", n+1, err)
		}
		if tx == nil {
			if tx, err = db.Begin(); err != nil {
				return err
			}
			if st, err = tx.Prepare("INSERT INTO docs (rowid, content) VALUES (?, ?)"); err != nil {
				return err
			}
		}
		n++
		if _, err := st.Exec(n, ev.Content); err != nil {
			return err
		}
		if n%10_000 == 0 {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return err
	}
	fmt.Println(n)
	return nil
}

// query answers words OR-ed, top 10 by bm25(), and prints the hit count.
func query(dir, words string) error {
	db, err := sql.Open("sqlite", filepath.Join(dir, "fts.db")+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query("SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10",
		strings.Join(strings.Fields(words), " OR "))
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var score float64
		if err := rows.Scan(&id, &score); err != nil {
			return err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fmt.Println(n)
	return nil
}
