package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
)

// findWait bounds how long resolveUnknown tries to look a write up.
const findWait = 10 * time.Second

// resolveUnknown finds out what a write whose owner died before answering
// did (ucl.ErrOutcomeUnknown): it attaches again, which takes the store
// over from the dead owner, and looks the request's events up in the log.
// All found: the command succeeded and prints them; none: nothing was
// written; else it says which were. It never guesses: when it cannot look
// (no event ids, the store cannot be opened), it says the outcome is
// unknown and how to find out.
func resolveUnknown(c *cli.Context, err error) error {
	_, rerr := resolveUnknownResults(c, err)
	return rerr
}

// resolveUnknownResults is resolveUnknown that also returns the events it
// printed as written when all were (a streaming append goes on then).
func resolveUnknownResults(c *cli.Context, err error) ([]ucl.EventResult, error) {
	var ue *ucl.OutcomeUnknownError
	if !errors.As(err, &ue) || len(ue.Events) == 0 {
		return nil, withHint(err, "the store owner died before answering: `ucl replay --raw --from SEQ` (SEQ: the head `ucl status` showed before) lists what was written; check before running the command again")
	}
	var out *ucl.Outcome
	// The dying owner may still accept a connection for a moment (its
	// listener closes last): a lookup it breaks off is tried again, on
	// the next owner or on the store opened here.
	for deadline := time.Now().Add(findWait); ; time.Sleep(50 * time.Millisecond) {
		api, aerr := ucl.Attach(storeDir(c), engineOptions(c))
		if aerr != nil {
			return nil, withHint(err, fmt.Sprintf("the store owner died before answering, and opening the store to find out failed (%v): `ucl get ID` with the ids of the input tells whether they were written; check before running the command again", aerr))
		}
		var ferr error
		out, ferr = ucl.FindEvents(context.Background(), api, ue.Events)
		api.Close()
		if ferr == nil {
			break
		}
		if !(errors.Is(ferr, ucl.ErrOutcomeUnknown) || ucl.OwnerGone(ferr)) || time.Now().After(deadline) {
			return nil, withHint(err, fmt.Sprintf("the store owner died before answering, and looking the events up failed (%v): `ucl replay --raw` lists the log's event ids; check before running the command again", ferr))
		}
	}
	n := len(ue.Events)
	if len(out.Missing) == 0 {
		if perr := printResults(c, out.Written); perr != nil {
			return nil, perr
		}
		fmt.Fprintf(c.App.ErrWriter, "note: the store owner died before answering; all %d events are in the log (looked up after taking the store over): written\n", n)
		return out.Written, nil
	}
	if len(out.Written) == 0 {
		return nil, withHint(fmt.Errorf("%s: the store owner died before answering, and none of the %d events is in the log (looked up after taking the store over): not written", ue.Method, n),
			"nothing was written; run the command again")
	}
	if perr := printResults(c, out.Written); perr != nil {
		return nil, perr
	}
	return nil, withHint(fmt.Errorf("%s: the store owner died before answering; %d of %d events are in the log (printed), %d are not (first missing id %s)", ue.Method, len(out.Written), n, len(out.Missing), out.Missing[0].ID),
		"only the printed events were written (duplicates of live items are never written); append the missing lines again")
}
