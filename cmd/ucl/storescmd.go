package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/cluster"
	"github.com/unlimitedcontext/ucl/internal/httpapi"
	"github.com/unlimitedcontext/ucl/internal/mcpserver"
	"github.com/unlimitedcontext/ucl/internal/tenant"
)

var storesFlag = &cli.StringFlag{Name: "stores", EnvVars: []string{"UCL_STORES"},
	Usage: "directory of tenant stores (one subdirectory per store): serve them all, each behind its own token"}

func storesDir(c *cli.Context) (string, error) {
	d := c.String("stores")
	if d == "" {
		return "", usage("give the stores directory with --stores DIR (or UCL_STORES)", "no stores directory")
	}
	if abs, err := filepath.Abs(d); err == nil {
		d = abs
	}
	return d, nil
}

var storesCommand = &cli.Command{
	Name:  "stores",
	Usage: "create, list and remove the tenant stores `ucl serve --stores DIR` hosts",
	Description: `Each store is an ordinary ucl store in DIR/NAME with its own vault key,
wallet and bearer token. create prints the token once; only its hash is kept
(DIR/NAME/token.sha256), so keep the token where its user can find it.`,
	Flags: []cli.Flag{storesFlag},
	Subcommands: []*cli.Command{
		{
			Name:      "create",
			Usage:     "create the stores NAME... and print each one's bearer token (once)",
			ArgsUsage: "NAME [NAME...]",
			Flags: []cli.Flag{storesFlag,
				&cli.StringFlag{Name: "wallet", Usage: "import this Arweave wallet (JWK file) into each new store instead of generating one per store"},
				&cli.StringFlag{Name: "cluster", Usage: "also publish each new store's identity to this cluster (nats://host:port), sealed under --cluster-key: every node can serve it at once"},
				clusterKeyFlag},
			Action: func(c *cli.Context) error {
				dir, err := storesDir(c)
				if err != nil {
					return err
				}
				if c.NArg() < 1 {
					return usage("ucl stores create NAME [NAME...]", "want a store name")
				}
				var w *ucl.Wallet
				if p := c.String("wallet"); p != "" {
					if w, err = ucl.LoadWallet(p); err != nil {
						return badValue(err, "--wallet takes an Arweave JWK file")
					}
				}
				key, err := clusterKey(c)
				if err != nil {
					return err
				}
				var node *cluster.Node
				if url := c.String("cluster"); url != "" {
					if key == nil {
						return usage("--cluster needs --cluster-key FILE (the cluster key every node has)", "no cluster key")
					}
					hn, _ := os.Hostname()
					if node, err = cluster.Connect(cluster.Config{URL: url, NodeID: "stores-create-" + hn}); err != nil {
						return withHint(err, "check --cluster: a node's NATS address (its --cluster-listen, or the NATS cluster's)")
					}
					defer node.Close()
				}
				var made []map[string]any
				for _, name := range c.Args().Slice() {
					tok, err := tenant.Create(dir, name, func(sd string) error {
						// Its own vault key; its own wallet unless one was given.
						s, err := ucl.Init(sd, ucl.InitOptions{Wallet: w})
						if err != nil {
							return err
						}
						return s.Close()
					})
					switch {
					case errors.Is(err, tenant.ErrBadName):
						return usage("a store name is 1-64 characters of a-z, 0-9, - and _, starting with a letter or digit", "%v", err)
					case errors.Is(err, tenant.ErrExists):
						return withHint(err, "pick another name, or remove it first with `ucl stores rm NAME`")
					case err != nil:
						return err
					}
					sd := filepath.Join(dir, name)
					if node != nil {
						if err := node.PublishIdentity(name, sd, key); err != nil {
							return withHint(err, "the store was created here; publish it again by serving it once with --cluster-key")
						}
					}
					made = append(made, map[string]any{"name": name, "dir": sd, "token": tok, "vault_key": ucl.VaultKeyPath(sd)})
					if !jsonOut(c) {
						printf(c, "Created store %s in %s\n", name, sd)
						printf(c, "  token:      %s\n", tok)
						printf(c, "  vault key:  %s (mode 0600)\n", ucl.VaultKeyPath(sd))
					}
				}
				if jsonOut(c) {
					if len(made) == 1 {
						return printJSON(c, made[0])
					}
					return printJSON(c, map[string]any{"stores": made})
				}
				printf(c, "A token is shown only now; ucl keeps its hash. Back up each vault key (ucl keys export --dir DIR/NAME).\n")
				return nil
			},
		},
		{
			Name:  "list",
			Usage: "list the stores and whether a process has each open",
			Flags: []cli.Flag{storesFlag},
			Action: func(c *cli.Context) error {
				dir, err := storesDir(c)
				if err != nil {
					return err
				}
				infos, err := tenant.List(dir)
				if err != nil {
					return err
				}
				if jsonOut(c) {
					if infos == nil {
						infos = []tenant.Info{}
					}
					return printJSON(c, map[string]any{"dir": dir, "stores": infos})
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "NAME\tOPEN\tCREATED\n")
				for _, in := range infos {
					fmt.Fprintf(tw, "%s\t%v\t%s\n", in.Name, in.Open, in.Created.Format(time.RFC3339))
				}
				return tw.Flush()
			},
		},
		{
			Name:      "rm",
			Usage:     "delete the store NAME and everything in it (refused while it is open)",
			ArgsUsage: "NAME",
			Flags:     []cli.Flag{storesFlag},
			Action: func(c *cli.Context) error {
				dir, err := storesDir(c)
				if err != nil {
					return err
				}
				if c.NArg() != 1 {
					return usage("ucl stores rm NAME", "want one store name")
				}
				name := c.Args().First()
				err = tenant.Remove(dir, name)
				switch {
				case errors.Is(err, tenant.ErrNoStore):
					return withHint(err, "`ucl stores list` shows the stores")
				case errors.Is(err, tenant.ErrInUse):
					return withHint(err, "a server has it open: wait for its idle close (--idle-timeout) or stop the server; nothing was deleted")
				case err != nil:
					return err
				}
				if jsonOut(c) {
					return printJSON(c, map[string]any{"removed": name})
				}
				printf(c, "Removed store %s\n", name)
				return nil
			},
		},
	},
}

// runServeStores is `ucl serve --stores DIR`: every store under DIR
// behind one listener, each reached by its own token (internal/tenant).
func runServeStores(c *cli.Context) error {
	dir, err := storesDir(c)
	if err != nil {
		return err
	}
	cfg, err := loadConfigIn(c, dir)
	if err != nil {
		return err
	}
	upstream, err := httpapi.NormalizeUpstream(cfg.String("proxy.upstream"))
	if err != nil {
		return usage("--upstream (or proxy.upstream) takes a base URL such as https://api.openai.com/v1", "%v", err)
	}
	tz, err := serverTZ(cfg)
	if err != nil {
		return err
	}
	opts := engineOptions(c)
	opts.Consolidate = consolidateOptions(cfg)
	opts.Embedder.Kind, opts.Embedder.URL, opts.Embedder.Model = cfg.String("index.embedder"), cfg.String("index.embed_url"), cfg.String("index.embed_model")
	key, err := clusterKey(c)
	if err != nil {
		return err
	}
	node, leave, err := startCluster(c, dir)
	if err != nil {
		return err
	}
	var lookup func(string) error
	if node != nil && key != nil {
		lookup = func(hash string) error {
			name, err := node.FetchIdentity(hash, dir, key)
			if err == nil {
				fmt.Fprintf(c.App.ErrWriter, "ucl: store %s provisioned from the cluster\n", name)
			} else if !errors.Is(err, cluster.ErrNoIdentity) {
				fmt.Fprintf(c.App.ErrWriter, "ucl: warning: fetch a store from the cluster: %v\n", err)
			}
			return err
		}
	}
	if leave != nil {
		defer leave()
	}
	host, err := tenant.NewHost(tenant.Options{
		Dir: dir,
		Open: func(name, sd string) (tenant.Opened, error) {
			o := opts
			o.Keys, o.VaultKeyPath = nil, "" // each store its own DIR/NAME/vault.key
			if node != nil {
				return clusterOpen(c, node, key, name, sd, o)
			}
			s, err := ucl.Open(sd, o)
			if err != nil {
				return tenant.Opened{}, err
			}
			return tenant.Opened{API: s, Close: s.Close, Serve: s.Serve}, nil
		},
		Handler: func(api ucl.API, token string) (http.Handler, error) {
			if token == "" {
				return nil, mcpserver.ErrNoToken
			}
			// The MCP face is built on its first request: building it
			// costs tens of milliseconds (every tool and its schema), and a
			// store served from another node's lease gets its faces built
			// anew for every request, almost never an MCP one.
			var once sync.Once
			var mcpH http.Handler
			var mcpErr error
			lazyMCP := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				once.Do(func() {
					mcpH, mcpErr = mcpserver.HTTPHandler(mcpserver.New(api, mcpserver.Options{Version: version, Log: c.App.ErrWriter, TZ: tz}), token)
				})
				if mcpErr != nil {
					http.Error(w, mcpErr.Error(), http.StatusInternalServerError)
					return
				}
				mcpH.ServeHTTP(w, r)
			})
			srv, err := httpapi.New(api, httpOptions(c, cfg, upstream, token, tz, lazyMCP))
			if err != nil {
				return nil, err
			}
			return srv.Handler(), nil
		},
		IdleTimeout:  c.Duration("idle-timeout"),
		Rate:         c.Float64("rate"),
		Burst:        c.Int("burst"),
		MaxBodyBytes: int64(cfg.Int("proxy.max_body_bytes")),
		Log:          c.App.ErrWriter,
		Lookup:       lookup,
	})
	if err != nil {
		return err
	}
	defer host.Close()
	if node != nil {
		wctx, wstop := context.WithCancel(context.Background())
		defer wstop()
		go watchLeases(c, wctx, node, host, dir, key)
	}
	ln, err := net.Listen("tcp", cfg.String("proxy.listen"))
	if err != nil {
		return withHint(fmt.Errorf("serve: listen: %w", err), "pick another address with --listen (or proxy.listen in DIR/ucl.toml)")
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		fmt.Fprintf(c.App.ErrWriter, "ucl: warning: listening on %s, reachable from other machines; the tokens are the only guard and HTTP is not encrypted\n", ln.Addr())
	}
	ctx, stop := signalContext()
	defer stop()
	hs := &http.Server{Handler: host, ReadHeaderTimeout: 30 * time.Second}
	tcpErr := make(chan error, 1)
	go func() { tcpErr <- hs.Serve(ln) }()
	known, _ := host.Stores()
	upShown := upstream
	if upShown == "" {
		upShown = "none (the proxy answers 503)"
	}
	fmt.Fprintf(c.App.ErrWriter, "ucl: serving %d stores of %s and http://%s (upstream %s, idle close after %s)\n",
		known, dir, ln.Addr(), upShown, c.Duration("idle-timeout"))
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-tcpErr:
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	errs := []error{hs.Shutdown(sctx), host.Close()}
	if runErr != nil && !errors.Is(runErr, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serve: %w", runErr))
	}
	return errors.Join(errs...)
}
