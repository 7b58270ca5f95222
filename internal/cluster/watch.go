package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// WatchLeases watches the lease bucket until ctx ends and calls takeover
// with the name of each store whose lease has not been renewed for a whole
// TTL: its owner stopped (died, or lost NATS), so the store should be
// taken over now rather than on its next request. A lease given back
// (deleted: the owner closed the store, e.g. when idle) is not a reason.
// takeover is called from one goroutine at a time and again every half
// TTL while the lease stays stale (several nodes race; the lease decides).
func (n *Node) WatchLeases(ctx context.Context, takeover func(name string)) error {
	w, err := n.kv.WatchAll(nats.Context(ctx))
	if err != nil {
		return fmt.Errorf("watch the lease bucket: %w", err)
	}
	defer w.Stop()
	ttl := n.cfg.LeaseTTL
	seen := map[string]time.Time{} // store -> when its lease was last written (or last acted on)
	cutOff := false
	tick := time.NewTicker(max(ttl/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if e == nil {
				continue // the initial values are all in
			}
			if e.Operation() == nats.KeyValuePut {
				seen[e.Key()] = time.Now()
			} else {
				delete(seen, e.Key())
			}
		case now := <-tick.C:
			if n.Connected() != nil {
				// Cut off, no update arrives: every lease would look stale.
				// Once back, what was missed is unknown: start the clocks
				// again (a lease still unrenewed a TTL later is stale).
				cutOff = true
				continue
			}
			if cutOff {
				cutOff = false
				for name := range seen {
					seen[name] = now
				}
				continue
			}
			for name, at := range seen {
				if now.Sub(at) >= ttl {
					// Again in half a TTL if nobody writes it meanwhile.
					seen[name] = now.Add(-ttl / 2)
					takeover(name)
				}
			}
		}
	}
}
