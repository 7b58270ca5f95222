// Package index builds the navigable map of a store (Build; the engine's
// Index method, `ucl index`, MCP uc_index, REST POST /v1/index): a text
// under a token budget an LLM reads to decide what to open next, and the
// same content structured (Result). It reads the projections the engine
// hands it (a projstd.Set at the log head: dedup, timelines, full-text,
// summary) and never opens a store.
//
// # Tiers
//
// The matches (every live item, or a query's full-text matches ranked by
// BM25, ties by chunk id; without a query, newest first; at most
// MaxMatches counted, beyond that Capped) are shown: up to Full in full;
// else up to Snippets as dated snippets with ids; beyond that as groups —
// months (newest first, in up to a quarter of the budget left), topics
// (the sessions' L0 key terms clustered greedily, at most 12, in up to a
// third of what is left then) and sessions (most matches first, with
// their L0 summaries, in the rest) — after the best matches as snippets
// in a quarter of the budget. A time overview (today, earlier this week
// from Monday, earlier this month, older; after now) always comes first.
// It is deterministic given Now.
//
// # Text
//
// One line each, in this order (the header and overview always):
//
//	INDEX of <"query"|the whole store>[ (<filters>)] at <now RFC 3339>: [at least ]<n> matches
//	by time: today <n> · earlier this week <n> · earlier this month <n> · older <n>[ · after now <n>]
//	matches in full (best first):
//	[<id>] <YYYY-MM-DD hh:mm> <session|->[/<role>] <kind>: <content>
//	<title>:                                    a snippet list's title
//	- <id> <YYYY-MM-DD> <session|->[/<role>]: <snippet, 140 runes>
//	months (<n>, newest first):
//	- <YYYY-MM>: <n> matches in <n> sessions → <link>
//	topics (<n>, from the sessions' key terms):
//	- "<term>" (with <co-terms>): <n> matches in <n> sessions, <first>..<last> → <link>
//	sessions (<n>, most matches first):
//	- session <id>|(no session): <n> matches, <first>..<last>[ — <summary>] → <link>
//	(<n> matches not listed one by one[; ...]: open a group, or narrow ...)
//
// Tokens are textutil.EstimateTokens of the text, at most the budget.
//
// # Links
//
// Each group carries the call that opens it as data, Link: an engine
// method's wire name (the method table, ucl.Methods) and its request's
// fields by their JSON names — {"method":"session","args":{"id":"s1"}}
// for a whole session, {"method":"index","args":{"query":..,"sessions":[..],
// "kinds":[..],"since":..,"until":..,"now":..}} for a narrower index (a
// month's or topic's matches; bounds as a date at midnight, else RFC 3339
// to the millisecond). Text ends each group's line with " → " and the
// link in the engine's own form, Link.String: the method, a space, the
// arguments as JSON. Each face renders it in its own syntax with Rewrite
// (the CLI as a ucl command, MCP as a tool call); REST returns it as the
// engine gives it. So that a face's rendering still fits the budget, each
// link counts for more tokens than its own form: as if it were 4+8·v
// bytes (plus 3 for each single quote in a value) and 1+2·v words
// longer, v the number of its values.
package index
