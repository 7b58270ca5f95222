package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/unlimitedcontext/ucl/log"
)

// ReadAllFlags is ReadAll that also reports, for every entry, whether its
// line set "allow_duplicate".
func ReadAllFlags(r io.Reader, o Options) ([]log.Entry, []bool, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read input: %w", err)
	}
	var out []log.Entry
	var allow []bool
	rs := newReplayState(o)
	for i, ln := range bytes.Split(data, []byte("\n")) {
		ln = bytes.TrimSpace(ln)
		if len(ln) == 0 || ln[0] == '#' {
			continue
		}
		es, replayed, err := rs.parse(ln, i+1, o)
		if err != nil {
			return nil, nil, err
		}
		if replayed { // an exact copy of an event: never a duplicate to drop
			out = append(out, es...)
			for range es {
				allow = append(allow, true)
			}
			continue
		}
		// ParseLine has checked the line; this reads one field of it.
		var f struct {
			AllowDuplicate bool `json:"allow_duplicate"`
		}
		if err := json.Unmarshal(ln, &f); err != nil {
			return nil, nil, &LineError{Line: i + 1, Field: "allow_duplicate", Err: fmt.Errorf("%w: %v", ErrBadInput, err)}
		}
		out = append(out, es...)
		for range es {
			allow = append(allow, f.AllowDuplicate)
		}
	}
	return out, allow, nil
}
