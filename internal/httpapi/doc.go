// Package httpapi is the TCP face of `ucl serve`: the REST API over a
// ucl.API, the OpenAI-compatible chat completions proxy that remembers,
// and the bearer-token guard in front of both (and of /mcp).
//
// # Auth
//
// Every route requires "Authorization: Bearer TOKEN" (compared in
// constant time); without it the answer is 401 with a JSON error. The
// token lives in DIR/token (mode 0600), created by LoadToken on first use.
// The owner socket DIR/ucl.sock is guarded by its file mode and needs no
// token.
//
// # REST routes
//
// Every route but health, documents, the proxy and models is an engine
// method declared in ucl.Methods (Routes lists them; a test holds this
// list against it). Request and result bodies are the engine's JSON
// shapes (ucl.API, the CLI's --json output); a GET fills the request from
// its path and query parameters by JSON name, a POST decodes its body
// strictly. A success answers the result itself:
//
//	GET    /v1/health                 {"ok":true,"head_seq":N}
//	GET    /v1/status                 ucl.StatusResult
//	POST   /v1/store                  ucl.RememberRequest → ucl.AppendResult
//	POST   /v1/append                 JSONL body (any content type but JSON), or
//	                                  ucl.AppendRequest (application/json) → ucl.AppendResult
//	POST   /v1/query                  ucl.SearchRequest → ucl.SearchResult
//	POST   /v1/context                ucl.ContextRequest → ucl.ContextResult
//	POST   /v1/index                  ucl.IndexRequest → ucl.IndexResult (the navigable index; links as data, index/doc.go)
//	POST   /v1/get                    ucl.GetRequest → ucl.GetResult
//	POST   /v1/dedupe                 ucl.DedupeRequest → ucl.DedupeResult
//	GET    /v1/profile?subject=S      ucl.ProfileResult (derived memory: the current profiles)
//	POST   /v1/items/{id}/edit        ucl.EditRequest → ucl.EditResult
//	GET    /v1/items/{id}/thread?depth=N  ucl.ThreadResult
//	GET    /v1/sessions?limit=N       ucl.SessionsResult
//	GET    /v1/sessions/{id}?offset=&limit=  ucl.SessionResult (or ?last=N:
//	                                  the session's last N chunks)
//	GET    /v1/documents/{id}         ucl.GetItem (a chunk id, or a document's chunk parent)
//	POST   /v1/tombstone              ucl.TombstoneRequest → ucl.TombstoneResult
//	POST   /v1/chat/completions       the proxy (see below)
//	GET    /v1/models                 passed through to the upstream
//
// Errors are {"error":{"code":CODE,"message":TEXT,"codes":[...]}} where
// CODE is the engine error's class (ucl.ClassOf): bad_request (400),
// not_found (404), conflict (409), forbidden (403), unavailable (503),
// internal (500); or the server's own: unauthorized (401),
// method_not_allowed (405), too_large (413: a body over
// Options.MaxBodyBytes, refused before it is read whole, or an item over
// the store's event bound, log.MaxEventSize), body_timeout (408: the body
// did not arrive within Options.BodyReadTimeout), upstream_unavailable
// (502), upstream_timeout (504) and no_upstream (503: the proxy has no
// upstream configured); "codes" lists the engine's sentinel codes
// (ucl.ErrorCodes) when there are any.
//
// # The proxy
//
// POST /v1/chat/completions takes an OpenAI chat completions request.
// The session is the X-UCL-Session header, else the request's "user"
// field, else Options.DefaultSession. The text of the last user message
// is the query; the context is packed under Options.MaxContextTokens
// (estimated tokens): the session's last Options.RecencyWindow turns
// first, then up to Options.SimilarityTopK ranked chunks, leaving out
// every turn whose text the request already carries. It is injected as
// one system message placed after the request's leading system/developer
// messages (or, with Options.InjectAs = InjectUser, prepended to the last
// user message's content); the request is otherwise forwarded byte for byte (the
// message is spliced into the raw body) to UPSTREAM/chat/completions,
// with the upstream API key as its bearer token (never the client's
// token). With "stream": true the upstream's SSE bytes are written to the
// client as they arrive, each read flushed.
//
// After a successful reply (HTTP 200 with a choice; for a stream, the
// final "data: [DONE]"), the user turn, the assistant's reply and each of
// its tool calls (kind tool_call, parent the reply) are appended to the
// session as one atomic batch, before the client receives the end of the
// reply (the last bytes of a plain reply, the [DONE] event of a stream):
// a client that has the whole answer can read it back from memory. An
// upstream error status, a timeout, a broken stream or a client that
// goes away stores nothing. The user turn's id is derived from the
// session, the message's index and its text, so a tool-call loop that
// resends the same user message stores it once.
//
// What is stored of a turn is bounded: a user message, a reply or a tool
// call's arguments longer than the store's event bound (log.MaxEventSize,
// less room for ids and meta; arguments an eighth of it) are forwarded
// whole and stored as their first bytes followed by "[ucl: truncated: the
// first N of M bytes are stored]". An upstream that sends nothing for
// Options.UpstreamTimeout, before or after its headers, is cut off (a
// broken stream: nothing stored). One SSE event over 4 MiB is not parsed:
// it and the rest of the stream are forwarded as they arrive and the
// exchange is not stored.
//
// Response headers X-UCL-Session and X-UCL-Context-Tokens say which
// session was used and how many tokens of memory were injected.
package httpapi
