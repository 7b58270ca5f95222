// Package arweave is ucl's Arweave transport: the wallet, the HTTP client
// (transactions, data, GraphQL, status), signing and chunking, ANS-104
// bundles, the uploaders and signature verification of fetched
// transactions. It knows nothing of ucl's log: the mirror domain (segments,
// tags, state, push, rebuild, disclosures, checkpoints) is package
// internal/mirror, which talks to this package through its Gateway
// interface, and snapshot publishing goes through snapshot.Gateway
// (internal/snapgw).
//
// # Hostile or broken gateways
//
// A gateway is not trusted for liveness or size either. Every call is
// bounded:
//
//   - Time: each attempt by Options.RequestTimeout (covering the body, so a
//     slow drip or a body that stops halfway ends there), each call with
//     all its retries by Options.CallTimeout, and the mirror optionally bounds a
//     whole push or rebuild (mirror.SyncConfig.Timeout,
//     mirror.RebuildOptions.Timeout). Running out
//     gives ErrTimeout naming the bound that ended it.
//   - Size: bodies are read through a limit, never whole into an unbounded
//     buffer. API answers are capped by Options.MaxResponseBytes, FetchData
//     by Options.MaxDataBytes, and mirror.Rebuild fetches a segment up to its
//     transaction's data size (when reported and under the cap) or
//     mirror.RebuildOptions.MaxSegmentBytes (default mirror.MaxSegmentSize, one record of
//     MaxRecordSize). A declared Content-Length over the bound fails before
//     reading; a longer stream fails at the bound (ErrTooLarge, not
//     retried); a body shorter than its Content-Length is retried as a
//     truncation.
//   - Pages: FindTxs stops with ErrPagination (and ErrGraphQL) when a
//     cursor repeats, a page brings no transaction not seen before, or the
//     page budget is spent (TxQuery.MaxPages, else Options.MaxPages, default
//     1000). The mirror's push derives its budget from its head: 10 + 2 pages per 100
//     seqs, at least 100 (mirror.SyncConfig.MaxPages overrides). Entries no
//     Arweave transaction could be (bad id, oversized tags or owner key)
//     are not kept, so the list a hostile gateway can make FindTxs hold is
//     bounded per entry as well as in count.
//
// # Gateways
//
// A Client reads and writes through an endpoint list (ParseEndpoints): one
// or more data gateways, asked in order, and optionally a GraphQL endpoint
// asked before the gateways' own /graphql. Each attempt of a call asks the
// endpoints in order until one answers 2xx; a gateway that fails
// (connection error, timeout, 5xx, 429) or answers 404 or another 4xx is
// passed over for the next, and only when every one failed retryably is
// there a backoff and another round (the bounds below hold for the whole
// call, all gateways included). The error of a call that failed everywhere
// is the first gateway's, unless it only said "not found" while another
// failed otherwise (a lagging gateway must not turn an outage into "not
// found"); it names the others (GatewayError.Also). Client.Answered says
// which endpoints answered.
//
// # Uploads
//
// L1 mode (default) posts one format-2 transaction per segment; bundle mode
// posts one ANS-104 bundle per batch of segments, each segment an item
// signed by the same wallet. Bundler mode (BundlerUploader) posts each
// segment as its own signed data item (signature type 1, no target, no
// anchor) to a bundler with the Turbo upload API (Bundler: POST /v1/tx,
// application/octet-stream; GET /v1/tx/{id}/status), which pays the fee
// and bundles it: the wallet needs no AR for items under the bundler's
// free size (FreeItemBytes, 100 KiB on Turbo; DataItemSize measures an
// item). The item id is what callers record. A 402 answer is
// ErrPaymentRequired; a lost answer is settled by asking the bundler's
// status. BundlerGateway routes a Client's Upload (checkpoints,
// disclosures) through the bundler too, and its Status follows the gateway
// first (confirmed only once the item's bundle is mined) and then the
// bundler (pending while the bundler holds the item, not found when
// neither does). FetchVerifiedTx checks an item the gateway serves no
// /tx/{id} for through GraphQL's signed fields and VerifySigned. Data up to Options.MaxInlineBytes (4 MiB) is
// posted inside the transaction JSON, larger data as /chunk posts. Every
// call takes a context; each HTTP attempt is bounded by RequestTimeout and
// retried with jittered exponential backoff on timeouts, connection errors,
// 5xx and 429, never on other 4xx. When a POST /tx fails ambiguously the
// gateway is asked about the (already fixed) id before failing, so a lost
// answer does not turn into a duplicate upload.
//
// # goar
//
// github.com/everFinance/goar v1.6.3 is used for keys, transaction signing,
// chunking and ANS-104 bundle items. Its HTTP client is not used: it takes no
// context, prints download progress to stdout (Client.DownloadChunkData,
// client_broadcast.go) and its GetTransactionData can return wrong bytes when
// uploads overlap. This package talks HTTP itself (every call takes a
// context) and never calls a goar function that writes to stdout. goar's
// log15 logger is silenced when this package is initialised (SilenceGoar).
//
// goar's chunker (utils.GenerateChunks) rounds the rebalanced second-to-last
// chunk down where the protocol rounds up, so for data over 256 KiB with an
// odd size and size mod 256 KiB under 32 KiB its data_root differs from the
// node's: an inline post is rejected and a chunked one breaks the strict
// data split. chunks.go computes chunks, proofs and data_root correctly and
// SignTx installs them before goar signs.
//
// # arlocal quirks (arlocal 1.1.66, see arlocaltest)
//
//   - GET /tx/{id}/status answers 200 "Pending" for unmined transactions
//     (a node answers 202), and 404 for bundled items; Status handles both
//     (GraphQL fallback for items).
//   - A POST /tx that hits an internal error (e.g. a duplicate id on a
//     retried post) answers 404 "Not Found"; PostTx then checks the id.
//   - A bundle posted inline is unbundled synchronously and its items are
//     visible (pending) at once. A bundle posted as chunks is unbundled
//     asynchronously after the last chunk, and /mine racing with that
//     unbundling fails with 404 (SQLITE UNIQUE constraint) without mining.
//     Bundles are therefore kept under MaxInlineBytes (mirror.SyncConfig.BatchBytes).
//   - /mine dedupes a chunked bundle's chunks by content hash, so a bundle
//     with two identical 256 KiB chunks would be corrupted.
//   - GraphQL returns newest first by default and pages of at most 100.
package arweave
