// Package deps pins the project's chosen dependencies in go.mod while the
// packages that use them are written. It is removed once every dependency has
// a real importer.
package deps

import (
	_ "github.com/blevesearch/bleve/v2"
	_ "github.com/coder/hnsw"
	_ "github.com/everFinance/goar"
	_ "github.com/everFinance/goar/types"
	_ "github.com/everFinance/goar/utils"
	_ "github.com/tidwall/wal"
	_ "github.com/urfave/cli/v2"
	_ "go.etcd.io/bbolt"
	_ "golang.org/x/term"
)
