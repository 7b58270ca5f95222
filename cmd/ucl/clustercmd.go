package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/cluster"
	"github.com/unlimitedcontext/ucl/internal/tenant"
)

var clusterFlags = []cli.Flag{
	&cli.StringFlag{Name: "cluster", Usage: "with --stores: run as a cluster node on this NATS JetStream (nats://host:port[,…])"},
	&cli.BoolFlag{Name: "cluster-embed", Usage: "with --stores: run an embedded JetStream server (see --cluster-listen, --cluster-routes) and join through it"},
	&cli.StringFlag{Name: "cluster-listen", Value: "127.0.0.1:-1", Usage: "embedded server: client address (port -1: any free port)"},
	&cli.StringFlag{Name: "cluster-route-listen", Usage: "embedded server: route address its peers connect to (host:port)"},
	&cli.StringFlag{Name: "cluster-routes", Usage: "embedded server: the peers' route addresses, comma-separated (host:port,…)"},
	&cli.StringFlag{Name: "node-id", Usage: "this node's name in leases (default: host name and route address)"},
	&cli.IntFlag{Name: "replicas", Value: cluster.DefaultReplicas, Usage: "replicas of each store's stream (3 in a 3-node cluster)"},
	&cli.DurationFlag{Name: "lease-ttl", Value: cluster.DefaultLeaseTTL, Usage: "an owner that does not renew its lease this long loses its stores"},
	clusterKeyFlag,
	&cli.IntFlag{Name: "snapshot-every", Value: cluster.DefaultSnapshotEvery, Usage: "an owner puts a snapshot of a store in the cluster's object store every this many events (negative: never)"},
}

var clusterKeyFlag = &cli.StringFlag{Name: "cluster-key", Usage: "file of the cluster key (64 hex digits, e.g. `openssl rand -hex 32`), the same on every node: stores' identities are shared through the cluster sealed under it, so a node serves a store it was never given"}

// clusterKey reads --cluster-key (nil: not given).
func clusterKey(c *cli.Context) ([]byte, error) {
	p := c.String("cluster-key")
	if p == "" {
		return nil, nil
	}
	k, err := cluster.LoadClusterKey(p)
	if err != nil {
		return nil, badValue(err, "--cluster-key takes a file of 64 hex digits (openssl rand -hex 32 > FILE), the same on every node")
	}
	return k, nil
}

// startCluster joins the cluster --cluster or --cluster-embed names (nil,
// nil: neither was given: the single-machine path, no NATS at all).
func startCluster(c *cli.Context, dir string) (*cluster.Node, func(), error) {
	url := c.String("cluster")
	if url == "" && !c.Bool("cluster-embed") {
		return nil, nil, nil
	}
	stop := func() {}
	id := c.String("node-id")
	if c.Bool("cluster-embed") {
		if url != "" {
			return nil, nil, usage("give --cluster URL or --cluster-embed, not both", "two clusters given")
		}
		host, port, err := splitHostPort(c.String("cluster-listen"))
		if err != nil {
			return nil, nil, usage("--cluster-listen takes host:port", "%v", err)
		}
		ec := cluster.EmbedConfig{Name: id, Host: host, Port: port, StoreDir: filepath.Join(dir, ".jetstream"), ClusterName: "ucl"}
		if rl := c.String("cluster-route-listen"); rl != "" {
			if ec.ClusterHost, ec.ClusterPort, err = splitHostPort(rl); err != nil {
				return nil, nil, usage("--cluster-route-listen takes host:port", "%v", err)
			}
			for _, r := range strings.Split(c.String("cluster-routes"), ",") {
				if r = strings.TrimSpace(r); r != "" {
					ec.Routes = append(ec.Routes, "nats-route://"+r)
				}
			}
			if id == "" {
				hn, _ := os.Hostname()
				id = hn + "-" + rl
			}
		}
		if id == "" {
			id, _ = os.Hostname()
		}
		ec.Name = id
		srv, err := cluster.StartEmbedded(ec)
		if err != nil {
			return nil, nil, err
		}
		stop = srv.Shutdown
		url = srv.ClientURL()
	}
	if id == "" {
		id, _ = os.Hostname()
	}
	// A fresh cluster elects its JetStream leader a moment after its
	// servers meet: wait for it, bounded.
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := cluster.Connect(cluster.Config{URL: url, NodeID: id, Replicas: c.Int("replicas"), LeaseTTL: c.Duration("lease-ttl"),
			SnapshotEvery: c.Int("snapshot-every")})
		if err == nil {
			fmt.Fprintf(c.App.ErrWriter, "ucl: cluster node %s on %s\n", id, url)
			return n, func() { n.Close(); stop() }, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, withHint(err, "check that the NATS servers run with JetStream and see each other")
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func splitHostPort(s string) (string, int, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("%q: want host:port", s)
	}
	var p int
	if _, err := fmt.Sscan(s[i+1:], &p); err != nil {
		return "", 0, fmt.Errorf("%q: bad port", s)
	}
	return s[:i], p, nil
}

// clusterOpen owns the store if no node does (taking it over from the
// stream), else forwards to its owner for one request.
func clusterOpen(c *cli.Context, node *cluster.Node, key []byte, name, dir string, o ucl.Options) (tenant.Opened, error) {
	if err := node.Connected(); err != nil {
		return tenant.Opened{}, err
	}
	owner, err := node.Owner(name)
	if err != nil {
		return tenant.Opened{}, err
	}
	if owner == "" || owner == node.ID() {
		ow, err := node.Own(context.Background(), name, dir, o)
		if err == nil {
			snap := "no snapshot restored"
			if ow.Snapshot.Used {
				snap = fmt.Sprintf("projections from snapshot %s at seq %d, %d replayed", ow.Snapshot.Name, ow.Snapshot.Seq, ow.Snapshot.Replayed)
			}
			fmt.Fprintf(c.App.ErrWriter, "ucl: owning store %s (took %s, %d events from the stream, %d published; %s)\n",
				name, ow.Took.Round(time.Millisecond), ow.Imported, ow.Published, snap)
			if key != nil {
				// Any node with the key can serve it from now on.
				if err := node.PublishIdentity(name, dir, key); err != nil {
					fmt.Fprintf(c.App.ErrWriter, "ucl: warning: store %s: %v\n", name, err)
				}
			}
			return tenant.Opened{API: ow.Store, Close: ow.Close, Serve: ow.Store.Serve, Valid: ow.Valid}, nil
		}
		if !errors.Is(err, cluster.ErrLeaseHeld) {
			return tenant.Opened{}, err
		}
	}
	cl := node.Client(name)
	return tenant.Opened{API: cl, Close: cl.Close, Transient: true}, nil
}

// watchLeases takes over, as soon as their leases expire, the stores whose
// owner stopped renewing (at most 8 at once): those of this node's
// directory, and with the cluster key (not nil) those it can fetch from
// the cluster by name.
func watchLeases(c *cli.Context, ctx context.Context, node *cluster.Node, host *tenant.Host, dir string, key []byte) {
	sem := make(chan struct{}, 8)
	err := node.WatchLeases(ctx, func(name string) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		go func() {
			defer func() { <-sem }()
			err := host.Warm(name)
			if errors.Is(err, tenant.ErrNoStore) && key != nil {
				ferr := node.FetchStore(name, dir, key)
				switch {
				case ferr == nil:
					fmt.Fprintf(c.App.ErrWriter, "ucl: store %s provisioned from the cluster (its owner stopped)\n", name)
					if err = host.Rescan(); err == nil {
						err = host.Warm(name)
					}
				case !errors.Is(ferr, cluster.ErrNoIdentity):
					err = ferr
				}
			}
			if err != nil && !errors.Is(err, tenant.ErrNoStore) {
				fmt.Fprintf(c.App.ErrWriter, "ucl: take over store %s: %v\n", name, err)
			}
		}()
	})
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "ucl: warning: %v; stores whose owner dies are taken over on their next request only\n", err)
	}
}
