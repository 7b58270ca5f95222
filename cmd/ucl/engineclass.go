package main

import "github.com/unlimitedcontext/ucl"

// engineClass is the engine's class of err (bad_request, not_found,
// conflict, forbidden, unavailable, internal).
//
// MERGE NOTE (h-cli, issue 25): this file stands in for ucl.ClassOf, which
// the lead is adding to errors.go with a class on every error code. Once
// that lands, replace the body with `return string(ucl.ClassOf(err))` and
// delete classOfCode: the table below is a copy of the lead's assignments,
// not a second source.
func engineClass(err error) string {
	for _, code := range ucl.ErrorCodes(err) {
		if c, ok := classOfCode[code]; ok {
			return c
		}
	}
	return classInternal
}

var classOfCode = func() map[string]string {
	m := map[string]string{}
	for class, codes := range map[string][]string{
		classBadRequest: {"ambiguous_log", "bad_address", "bad_request", "edit_chunk", "embedder_config", "empty_scope", "ingest_bad_input",
			"key_outside_store", "log_bad_proof", "no_input", "no_targets", "projections_unknown", "query_bad_budget", "query_bad_filter",
			"query_bad_format", "query_bad_k", "query_bad_mode", "query_bad_time_range", "query_empty", "unknown_embedder"},
		"not_found": {"arweave_not_found", "log_not_found", "log_shredded", "no_document", "no_grantee_key", "no_match", "no_segments",
			"not_anchored", "snapshot_none", "store_not_initialized", "timelines_not_found", "unknown_grant", "unknown_item"},
		"unavailable": {"arweave_graphql", "arweave_rejected", "arweave_timeout", "arweave_tx_pending", "arweave_unavailable", "bad_wallet",
			"canceled", "deadline", "log_closed", "log_failed", "log_locked", "no_wallet", "vector_embedder"},
		"conflict": {"arweave_disclosure", "arweave_tx_signature", "checkpoint_diverged", "checkpoint_hidden", "dir_not_empty", "history_rewritten",
			"item_tombstoned", "log_id_conflict", "log_inconsistent", "projections_differ", "proof_rejected", "share_rejected", "snapshot_ahead",
			"snapshot_diverged", "snapshot_embedder", "snapshot_foreign", "snapshot_incompatible", "store_exists"},
		"forbidden": {"crypto_wrong_key", "log_no_keys", "not_for_this_wallet", "rotation_needs_key", "snapshot_key", "wrong_vault_key"},
	} {
		for _, code := range codes {
			m[code] = class
		}
	}
	return m
}()
