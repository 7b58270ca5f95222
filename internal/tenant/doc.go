// Package tenant hosts many ucl stores behind one HTTP listener: `ucl serve
// --stores DIR`.
//
// # Layout
//
// DIR holds one subdirectory per tenant store, named by the store's name
// (ValidName: 1 to 64 characters of a-z, 0-9, '-' and '_', starting with
// a letter or digit). Each is an ordinary ucl store (its own log, vault
// key and wallet) plus one file of this package:
//
//	DIR/NAME/token.sha256   hex SHA-256 of the store's bearer token, one
//	                        line, mode 0600
//
// The token itself is printed once when the store is created (Create) and
// is not kept: a request's "Authorization: Bearer TOKEN" names its store
// by the token's hash. A directory without token.sha256 is not served.
//
// # Serving
//
// Host maps a request's token to its store, opens the store on first use
// (and serves its owner socket DIR/NAME/ucl.sock while open, so the CLI
// attaches to it), hands the request to the store's own handler (REST,
// proxy and MCP, the same as single-store `ucl serve`), and closes the
// store after Options.IdleTimeout without requests. An unknown token gets
// 401 (after one rescan of DIR, so stores created while the host runs are
// found). Each store has a token bucket of Options.Rate requests a second
// with Options.Burst in reserve; a request over it gets 429 with
// Retry-After (whole seconds, at least 1). Request bodies are capped per
// request at Options.MaxBodyBytes (413).
//
// Options.Open decides what "open" means: on one machine it opens the
// store; in a cluster (internal/cluster) it either takes the store over or
// returns a client of its owner elsewhere, marked Transient so it is used
// for one request only (the owner may change at any time).
package tenant
