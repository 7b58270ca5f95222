package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/config"
	"github.com/unlimitedcontext/ucl/internal/httpapi"
	"github.com/unlimitedcontext/ucl/internal/mcpserver"
	"github.com/unlimitedcontext/ucl/internal/tenant"
	"github.com/unlimitedcontext/ucl/log"
)

// shutdownGrace is how long in-flight requests may finish after a signal.
const shutdownGrace = 30 * time.Second

// serveFlags map to config keys; they carry no EnvVars because the config
// package reads the environment itself (one precedence, one place).
var serveFlags = []cli.Flag{
	&cli.StringFlag{Name: "listen", Usage: "TCP address (config proxy.listen, UCL_LISTEN; default 127.0.0.1:8080)"},
	&cli.StringFlag{Name: "upstream", Usage: "OpenAI-compatible base URL: https://api.openai.com/v1 (canonical) or https://api.openai.com, a bare host gets /v1 (config proxy.upstream, UCL_UPSTREAM)"},
	&cli.StringFlag{Name: "default-session", Usage: "session of proxied requests naming none (config proxy.default_session)"},
	&cli.IntFlag{Name: "max-context-tokens", Usage: "token budget of the injected memory (config retrieval.max_context_tokens)"},
	storesFlag,
	&cli.DurationFlag{Name: "idle-timeout", Value: tenant.DefaultIdleTimeout, Usage: "with --stores: close a store after this long without requests"},
	&cli.Float64Flag{Name: "rate", Value: tenant.DefaultRate, Usage: "with --stores: requests a second per store (429 beyond)"},
	&cli.IntFlag{Name: "burst", Value: tenant.DefaultBurst, Usage: "with --stores: requests per store allowed at once above --rate"},
}

var serveFlagKeys = map[string]string{
	"listen": "proxy.listen", "upstream": "proxy.upstream", "default-session": "proxy.default_session",
	"max-context-tokens": "retrieval.max_context_tokens",
}

// embedderFlagKeys map the global embedder flags to config keys.
var embedderFlagKeys = map[string][2]string{
	"embedder": {"index.embedder", "UCL_EMBEDDER"}, "embed-url": {"index.embed_url", "UCL_EMBED_URL"},
	"embed-model": {"index.embed_model", "UCL_EMBED_MODEL"},
}

// loadConfig resolves DIR/ucl.toml, the environment and the flags given on
// the command line.
func loadConfig(c *cli.Context) (*config.Config, error) {
	return loadConfigIn(c, storeDir(c))
}

// loadConfigIn is loadConfig with the settings file of dir (the stores
// directory of `ucl serve --stores`).
func loadConfigIn(c *cli.Context, dir string) (*config.Config, error) {
	flags := map[string]string{}
	for name, key := range serveFlagKeys {
		if c.IsSet(name) {
			flags[key] = c.String(name)
			if name == "max-context-tokens" {
				flags[key] = fmt.Sprint(c.Int(name))
			}
		}
	}
	// The global embedder flags read their variables themselves: a value
	// equal to its variable came from the environment, not the flag.
	for name, ke := range embedderFlagKeys {
		if c.IsSet(name) && (os.Getenv(ke[1]) == "" || c.String(name) != os.Getenv(ke[1])) {
			flags[ke[0]] = c.String(name)
		}
	}
	cfg, err := config.Load(dir, os.Getenv, flags)
	if err != nil {
		return nil, configError(err, "fix the setting named above (see docs/serve.md for every key)")
	}
	return cfg, nil
}

var serveCommand = &cli.Command{
	Name:      "serve",
	Usage:     "own the store and serve the REST API, the OpenAI-compatible proxy and MCP over HTTP",
	ArgsUsage: " ",
	Description: `Opens the store (taking its lock), serves the other ucl commands on
DIR/ucl.sock exactly like ucl daemon, and on TCP (--listen, default
127.0.0.1:8080) serves:
  /v1/...                the REST API (store, append, query, context, sessions,
                         documents, tombstone, status, health)
  /v1/chat/completions   an OpenAI-compatible proxy to --upstream that injects
                         memory and remembers each exchange
  /v1/models             passed through to the upstream
  /mcp                   MCP over streamable HTTP
--upstream is the upstream's base URL, canonically with its /v1
(https://api.openai.com/v1); a bare host gets /v1 added, so
https://api.openai.com works too. Requests go to UPSTREAM/chat/completions.
Every TCP route needs "Authorization: Bearer TOKEN"; the token is DIR/token
(created on first use, mode 0600; ` + "`ucl serve token`" + ` prints it). The upstream
API key comes from UCL_UPSTREAM_API_KEY or OPENAI_API_KEY. Settings come from
flags, then the environment, then DIR/ucl.toml (` + "`ucl config show`" + `).
Stops on SIGINT/SIGTERM after in-flight requests finish.`,
	Flags: slices.Concat(serveFlags, clusterFlags),
	Subcommands: []*cli.Command{
		{
			Name:  "token",
			Usage: "print the bearer token (creating it if absent); `ucl serve token rotate` replaces it",
			Action: func(c *cli.Context) error {
				tok, err := httpapi.LoadToken(storeDir(c))
				if err != nil {
					return err
				}
				printf(c, "%s\n", tok)
				return nil
			},
			Subcommands: []*cli.Command{{
				Name:  "rotate",
				Usage: "replace the bearer token (a running ucl serve keeps the old one until restarted)",
				Action: func(c *cli.Context) error {
					tok, err := httpapi.RotateToken(storeDir(c))
					if err != nil {
						return err
					}
					printf(c, "%s\n", tok)
					return nil
				},
			}},
		},
	},
	Action: runServe,
}

func runServe(c *cli.Context) error {
	if c.NArg() > 0 {
		return usage("ucl serve takes flags only (see `ucl serve --help`)", "unexpected argument %q", c.Args().First())
	}
	if c.IsSet("stores") {
		return runServeStores(c)
	}
	dir := storeDir(c)
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	upstream, err := httpapi.NormalizeUpstream(cfg.String("proxy.upstream"))
	if err != nil {
		return usage("--upstream (or proxy.upstream) takes a base URL such as https://api.openai.com/v1", "%v", err)
	}
	if cl, err := ucl.Dial(dir); err == nil {
		cl.Close()
		return withHint(fmt.Errorf("serve: %s is already owned by %s", dir, ownerName(dir)),
			"stop that process first (ucl serve must own the store to serve it)")
	}
	opts := engineOptions(c)
	opts.Consolidate = consolidateOptions(cfg)
	opts.Embedder.Kind, opts.Embedder.URL, opts.Embedder.Model = cfg.String("index.embedder"), cfg.String("index.embed_url"), cfg.String("index.embed_model")
	s, err := ucl.Open(dir, opts)
	if errors.Is(err, log.ErrLocked) {
		return withHint(fmt.Errorf("serve: %s is in use by %s: %w", dir, ownerName(dir), err), "wait for it to finish or stop it")
	}
	if err != nil {
		return openError(err)
	}
	defer s.Close()
	token, err := httpapi.LoadToken(dir)
	if err != nil {
		return err
	}
	tz, err := serverTZ(cfg)
	if err != nil {
		return err
	}
	mcpH, err := mcpserver.HTTPHandler(mcpserver.New(s, mcpserver.Options{Version: version, Log: c.App.ErrWriter, TZ: tz}), token)
	if err != nil {
		return err
	}
	srv, err := httpapi.New(s, httpOptions(c, cfg, upstream, token, tz, mcpH))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.String("proxy.listen"))
	if err != nil {
		return withHint(fmt.Errorf("serve: listen: %w", err), "pick another address with --listen (or proxy.listen in DIR/ucl.toml)")
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		fmt.Fprintf(c.App.ErrWriter, "ucl: warning: listening on %s, reachable from other machines; the token is the only guard and HTTP is not encrypted\n", ln.Addr())
	}
	ctx, stop := signalContext()
	defer stop()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
	sockErr := make(chan error, 1)
	go func() { sockErr <- s.Serve(ctx) }()
	tcpErr := make(chan error, 1)
	go func() { tcpErr <- hs.Serve(ln) }()
	runConsolidateSchedule(ctx, s, cfg, c.App.ErrWriter)
	if upstream == "" {
		upstream = "none (the proxy answers 503)"
	}
	// One line a script can wait for: the address actually bound.
	fmt.Fprintf(c.App.ErrWriter, "ucl: serving %s on %s and http://%s (upstream %s, token in %s)\n",
		dir, ucl.SocketPath(dir), ln.Addr(), upstream, httpapi.TokenPath(dir))
	var runErr error
	sockDone := false
	select {
	case <-ctx.Done():
	case runErr = <-tcpErr:
	case runErr = <-sockErr:
		sockDone = true
	}
	stop() // ends the socket server too
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	errs := []error{hs.Shutdown(sctx)}
	ends := []error{runErr}
	if !sockDone {
		ends = append(ends, <-sockErr)
	}
	for _, e := range ends {
		if e != nil && !errors.Is(e, http.ErrServerClosed) && !errors.Is(e, context.Canceled) {
			errs = append(errs, fmt.Errorf("serve: %w", e))
		}
	}
	return errors.Join(errs...)
}

// httpOptions are the TCP faces' settings from the effective config.
func httpOptions(c *cli.Context, cfg *config.Config, upstream, token, tz string, mcpH http.Handler) httpapi.Options {
	return httpapi.Options{
		Token: token, MCP: mcpH,
		MaxBodyBytes:     int64(cfg.Int("proxy.max_body_bytes")),
		Upstream:         upstream,
		UpstreamKey:      cfg.UpstreamKey,
		UpstreamTimeout:  cfg.Duration("proxy.upstream_timeout"),
		MaxContextTokens: cfg.Int("retrieval.max_context_tokens"),
		RecencyWindow:    cfg.Int("retrieval.recency_window"),
		SimilarityTopK:   cfg.Int("retrieval.similarity_top_k"),
		DefaultSession:   cfg.String("proxy.default_session"),
		InjectAs:         cfg.String("proxy.inject"),
		Log:              c.App.ErrWriter,
		TZ:               tz,
	}
}

func ownerName(dir string) string {
	if p := ownerProcess(dir); p != "" {
		return p
	}
	return "another ucl process"
}

var configCommand = &cli.Command{
	Name:  "config",
	Usage: "show the effective settings (flags > environment > DIR/ucl.toml > defaults)",
	Subcommands: []*cli.Command{{
		Name:  "show",
		Usage: "print every setting, its value and where it came from (secrets masked)",
		Flags: serveFlags,
		Action: func(c *cli.Context) error {
			cfg, err := loadConfig(c)
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(c, map[string]any{"file": cfg.Path, "settings": cfg.Settings()})
			}
			file := cfg.Path
			if file == "" {
				file = "none (" + storeDir(c) + "/" + config.FileName + " does not exist)"
			}
			printf(c, "config file: %s\n", file)
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			for _, st := range cfg.Settings() {
				src := st.Source
				if st.Env != "" {
					src += " " + st.Env
				}
				v := st.Value
				if v == "" {
					v = `""`
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Key, v, src)
			}
			return tw.Flush()
		},
	}},
}
