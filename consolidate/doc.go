// Package consolidate is ucl's derived memory: facts and per-subject
// profiles that a model extracts from the turns, stored as ordinary log
// events that cite their sources, checked against them, and forgotten with
// them. The engine (ucl.Store.Consolidate, ucl.Store.Tombstone,
// consolidate_engine.go at the module root) drives it; this package holds
// the model protocol, the support check, the profile rendering and the
// cascade rules, none of which touch the store.
//
// # Why events
//
// What a model says is not reproducible, so it enters the log once, as
// store events, like a turn: a projection rebuild, a snapshot restore and
// a device rebuilt from Arweave replay those events and never call the
// model (same log ⇒ same projections, with the model server gone).
//
// # The model call
//
// One OpenAI chat-completions request (POST {endpoint}/chat/completions;
// Ollama's /v1 works the same) per batch of turns: temperature 0, no
// streaming, the system prompt below and one user message holding the
// JSON {"turns": [{id, session, role, time, content}], "known_facts":
// [{id, subject, text}]}, and response_format
// {"type":"json_schema","json_schema":{"name":"ucl_facts","strict":true,
// "schema":...}} where the schema is exactly
//
//	{"facts": [{"subject": str, "text": str, "sources": [str], "supersedes": [str]}]}
//
// with every field required and no other field allowed. The request
// body's bytes are frozen by testdata/request.golden.json; a change to the
// prompt or the schema must change PromptVersion. The API key travels
// only in the Authorization header: it is in no error, no hash, no event.
//
// The answer is accepted whole or not at all (ParseResponse): status 200,
// a body of at most MaxResponseBytes, exactly one choice with
// finish_reason "stop" and no refusal (else ErrPartial), and message
// content that decodes strictly as the schema (unknown or missing fields,
// trailing data, an empty subject or text, no sources, more than MaxFacts
// facts, a text over MaxFactRunes: ErrMalformed). Any other status, a
// transport error or the Timeout is ErrUpstream (a timeout also matches
// context.DeadlineExceeded). Nothing of a rejected answer is stored.
//
// Turns sent: live items of kind conversation with role user or
// assistant, outside the derived session (never system prompts, tool
// calls or documents), in seq order, each cut to MaxTurnRunes for the
// request (the support check reads the whole turn).
//
// # Grounded or refused
//
// Each fact of an accepted answer is stored only if
//   - every source it cites is one of the turns of that request, still live
//     when the batch is appended (the check and the append hold the lock a
//     tombstone takes, so no source can go in between);
//   - Check passes on the text of its sources: every number and every name
//     (a capitalised word after the first; the first word too when a source
//     spells it capitalised) occurs in them, and at least MinTermShare of
//     its other words of three letters or more that are not stop words
//     occur too (a word matches another with the same stem, or a common
//     prefix of at least four letters that is the whole shorter word or at
//     least five letters); a fact with no such term is refused;
//   - what it supersedes is a current fact that was sent as known;
//   - it duplicates no live fact (the dedup projection: same session, role
//     and kind, same normalized text) nor an earlier fact of the answer.
//
// Refused facts and duplicates are listed in the run's report, with the
// reason (and the terms missing from the sources); they leave nothing in
// the log.
//
// # Derived items
//
// Facts are items of kind knowledge, profiles of kind profile (log kind
// 5), both in session Session ("ucl.memory") with role Role ("memory"),
// so one session listing finds them all. Meta (string values):
//
//	derived_from          the source ids, comma-separated (a fact: turn ids in
//	                      the model's order; a profile: the ids of the facts it lists)
//	subject               who or what it is about
//	model                 the model that answered (absent on profiles a tombstone re-rendered)
//	prompt_version        PromptVersion of the request
//	request_hash          hex SHA-256 of the request body sent
//	consolidated_through  decimal seq: every pending turn up to it was offered
//	consolidated_scope    the session the run was limited to, "" for all
//	dropped_sources       (after a tombstone) sources taken away, comma-separated
//
// A fact's content time is its newest source's. A fact the model says
// updates known facts carries them in the store body's supersedes list
// (store v2, history kept). A profile is not written by the model: it is
// RenderProfile of the subject's current facts (live, not superseded by a
// live fact; the newest MaxProfileFacts of them), each line with its fact
// id and source ids, appended when it
// differs from the subject's current profile, which it supersedes.
//
// # What is pending
//
// A run sends the pending turns oldest first (by seq), Turns per request;
// ConsolidateRequest.Since leaves out turns older than a content time, and
// those of them below a request's through seq then count as offered (a
// later run without Since does not send them). A turn is consolidated
// when its seq is at most the newest
// consolidated_through of a live derived item of its scope (the run's
// session, or "" for every session), or of the store's local record
// DIR/consolidate.json ({"version":1,"through":N,"sessions":{S:N}}),
// written when a request's facts were all refused or duplicates and so
// left nothing in the log. A re-run over the same turns therefore sends
// nothing; a store rebuilt elsewhere without the local record may offer
// such turns once more (what comes back is checked the same way).
//
// # Forgetting
//
// A tombstone's batch carries its consequences for derived memory
// (PlanCascade, to a fixpoint):
//   - a fact citing a removed item keeps its other live sources when Check
//     still passes on them: an edit event of the fact with derived_from
//     reduced and dropped_sources naming what went (its text unchanged);
//   - otherwise the fact is tombstoned: one tombstone event per derived
//     item, reason "derived memory: <why> (derived from <ids>; forgotten
//     with tombstone <event id of the user's tombstone>)" — ids only,
//     never a word of the forgotten content;
//   - a profile citing a removed fact is tombstoned (superseded versions
//     too: they hold the fact's text), and the subject's profile is
//     rendered again from what stays.
//
// All of it is one AppendBatch with the tombstone, so no reader sees a
// fact outlive its source. `ucl keys rotate` then shreds the derived
// items with their sources: every version of a tombstoned item, edits
// included. `ucl audit show` of a derived item's seq names the tombstone
// that removed it, whose reason says where it came from and why it went.
package consolidate
