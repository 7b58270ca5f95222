package ucl

import "github.com/unlimitedcontext/ucl/proof"

// RebuildCheckpoint is the check of a grantor's log a received share
// carries (proof.LogCheck).
//
// Deprecated: kept only until sharing moves into its own package; use
// proof.LogCheck.
type RebuildCheckpoint = proof.LogCheck

// checkRebuilt is proof.CheckLog, for sharepull.go until sharing moves.
var checkRebuilt = proof.CheckLog
