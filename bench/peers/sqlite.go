package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the pure-Go SQLite (no cgo), registered as "sqlite"
)

// SQLite peers: a table (seq INTEGER PRIMARY KEY, data BLOB) in WAL mode
// with synchronous=FULL, the settings under which a commit is durable when
// it returns (SQLite's own WAL documentation: NORMAL may lose the last
// transactions on power loss). One transaction per batch of 256, or per
// event for the single writer.

func openSQLite(dir string) *sql.DB {
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "log.db"))
	if err != nil {
		fail(err)
	}
	db.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
		"CREATE TABLE log (seq INTEGER PRIMARY KEY, data BLOB NOT NULL)"} {
		if _, err := db.Exec(p); err != nil {
			fail(fmt.Errorf("sqlite %q: %w", p, err))
		}
	}
	return db
}

// sqliteInsert inserts events first..first+n-1 in one transaction.
func sqliteInsert(db *sql.DB, first, n int) {
	tx, err := db.Begin()
	if err != nil {
		fail(err)
	}
	st, err := tx.Prepare("INSERT INTO log (seq, data) VALUES (?, ?)")
	if err != nil {
		fail(err)
	}
	data := []byte(content512)
	for i := 0; i < n; i++ {
		if _, err := st.Exec(first+i, data); err != nil {
			fail(err)
		}
	}
	st.Close()
	if err := tx.Commit(); err != nil {
		fail(err)
	}
}

func sqliteBatches(dir string, batches int) result {
	db := openSQLite(dir)
	defer os.RemoveAll(dir)
	defer db.Close()
	t := start()
	for i := 0; i < batches; i++ {
		sqliteInsert(db, i*256+1, 256)
	}
	return t.done(batches * 256)
}

func sqliteSingles(dir string, n int) result {
	db := openSQLite(dir)
	defer os.RemoveAll(dir)
	defer db.Close()
	t := start()
	for i := 0; i < n; i++ {
		sqliteInsert(db, i+1, 1)
	}
	return t.done(n)
}

// sqliteReplay reads every row back in seq order (SQLite checks page
// structure, not content: it has no hash chain or encryption to verify).
func sqliteReplay(dir string, n int) result {
	db := openSQLite(dir)
	defer os.RemoveAll(dir)
	for i := 0; i < n; i += 1000 {
		sqliteInsert(db, i+1, min(1000, n-i))
	}
	db.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, "log.db"))
	if err != nil {
		fail(err)
	}
	defer db.Close()
	t := start()
	rows, err := db.Query("SELECT seq, data FROM log ORDER BY seq")
	if err != nil {
		fail(err)
	}
	got := 0
	var seq int64
	var data []byte
	for rows.Next() {
		if err := rows.Scan(&seq, &data); err != nil {
			fail(err)
		}
		got++
	}
	if err := rows.Err(); err != nil {
		fail(err)
	}
	rows.Close()
	res := t.done(n)
	if got != n {
		fail(fmt.Errorf("sqlite replay: %d rows, want %d", got, n))
	}
	return res
}
