// Package config reads DIR/ucl.toml and resolves every setting of ucl in
// one place, with one precedence: flag > environment > file > default.
//
// The file (TOML, github.com/BurntSushi/toml):
//
//	[proxy]
//	listen = "127.0.0.1:8080"          # UCL_LISTEN
//	upstream = "https://api.openai.com/v1"   # UCL_UPSTREAM
//	upstream_api_key_env = "OPENAI_API_KEY"  # the variable holding the upstream key
//	upstream_timeout = "5m"            # UCL_UPSTREAM_TIMEOUT
//	inject = "system"                  # UCL_INJECT: system message, or "user" (prepended to the last user message)
//	default_session = "proxy"          # UCL_DEFAULT_SESSION
//	max_body_bytes = 33554432          # UCL_MAX_BODY_BYTES
//
//	[retrieval]
//	max_context_tokens = 2000          # UCL_MAX_CONTEXT_TOKENS
//	recency_window = 6                 # UCL_RECENCY_WINDOW
//	similarity_top_k = 8               # UCL_SIMILARITY_TOP_K
//	timezone = ""                      # UCL_TIMEZONE: IANA name of the days of "yesterday"… (default: the machine's)
//
//	[arweave]
//	gateway = "https://arweave.net"    # UCL_GATEWAY: the data gateway
//	gateways = ["https://arweave.net", "https://ar-io.dev"]  # UCL_GATEWAYS (comma-separated): several, read in order, falling over
//	graphql = ""                       # UCL_GRAPHQL: a GraphQL endpoint (…/graphql) asked before the gateways' own
//	bundler = ""                       # UCL_BUNDLER: upload through this bundler (Turbo upload API), e.g. https://upload.ardrive.io
//	wallet_path = ""                   # UCL_WALLET (default DIR/wallet.json)
//
//	[index]
//	embedder = "hash"                  # UCL_EMBEDDER: hash, ollama, openai
//	embed_url = ""                     # UCL_EMBED_URL
//	embed_model = ""                   # UCL_EMBED_MODEL
//
//	[consolidate]
//	model = ""                         # UCL_CONSOLIDATE_MODEL (empty: off)
//	endpoint = ""                      # UCL_CONSOLIDATE_ENDPOINT (empty: proxy.upstream)
//	timeout = "2m"                     # UCL_CONSOLIDATE_TIMEOUT
//	every = ""                         # UCL_CONSOLIDATE_EVERY: the owner consolidates this often (empty: never)
//
// The upstream API key is never read from the file: it comes from
// UCL_UPSTREAM_API_KEY, else from the variable upstream_api_key_env names
// (default OPENAI_API_KEY). The consolidation model's key is
// UCL_CONSOLIDATE_API_KEY, else the upstream key. An unknown key, or a value of the wrong type
// or out of range, is an error naming the key (and, for the file, the
// line).
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// FileName is the config file inside the store directory.
const FileName = "ucl.toml"

// ErrBadConfig is returned when a setting (in the file, the environment or
// a flag) is unknown or has a bad value; the message names it.
var ErrBadConfig = errors.New("config: bad setting")

// Sources of a value.
const (
	SourceDefault = "default"
	SourceFile    = "file"
	SourceEnv     = "env"
	SourceFlag    = "flag"
)

type kind int

const (
	kString kind = iota
	kInt
	kDuration
	kURL
	kChoice
	kURLList // TOML array of URLs (or one string); comma-separated in the environment
)

// spec describes one setting.
type spec struct {
	key     string // section.name
	env     string
	def     string
	kind    kind
	min     int64 // kInt: the smallest value allowed
	choices []string
	doc     string
}

// specs lists every setting, in display order.
var specs = []spec{
	{key: "proxy.listen", env: "UCL_LISTEN", def: "127.0.0.1:8080", doc: "TCP address of ucl serve"},
	{key: "proxy.upstream", env: "UCL_UPSTREAM", kind: kURL, doc: "OpenAI-compatible base URL the proxy forwards to (canonically with /v1; a bare host gets /v1)"},
	{key: "proxy.upstream_api_key_env", env: "UCL_UPSTREAM_API_KEY_ENV", def: "OPENAI_API_KEY", doc: "environment variable holding the upstream API key"},
	{key: "proxy.upstream_timeout", env: "UCL_UPSTREAM_TIMEOUT", def: "5m", kind: kDuration, doc: "wait for the upstream's response headers"},
	{key: "proxy.inject", env: "UCL_INJECT", def: "system", kind: kChoice, choices: []string{"system", "user"}, doc: "where memory goes: a system message, or prepended to the last user message"},
	{key: "proxy.default_session", env: "UCL_DEFAULT_SESSION", def: "proxy", doc: "session of requests with no X-UCL-Session header and no user field"},
	{key: "proxy.max_body_bytes", env: "UCL_MAX_BODY_BYTES", def: "33554432", kind: kInt, min: 1024, doc: "largest request body (413 beyond)"},
	{key: "retrieval.max_context_tokens", env: "UCL_MAX_CONTEXT_TOKENS", def: "2000", kind: kInt, min: 1, doc: "token budget of the injected memory"},
	{key: "retrieval.recency_window", env: "UCL_RECENCY_WINDOW", def: "6", kind: kInt, min: 0, doc: "recent turns of the session considered"},
	{key: "retrieval.similarity_top_k", env: "UCL_SIMILARITY_TOP_K", def: "8", kind: kInt, min: 1, doc: "ranked chunks considered"},
	{key: "retrieval.timezone", env: "UCL_TIMEZONE", doc: "IANA time zone of the days of time phrases such as \"yesterday\" (default: the machine's)"},
	{key: "arweave.gateway", env: "UCL_GATEWAY", def: "https://arweave.net", kind: kURL, doc: "Arweave gateway"},
	{key: "arweave.gateways", env: "UCL_GATEWAYS", kind: kURLList, doc: "several data gateways, read in order (a failing one is passed over); over arweave.gateway"},
	{key: "arweave.graphql", env: "UCL_GRAPHQL", kind: kURL, doc: "GraphQL endpoint (full URL, …/graphql) asked before the gateways' own"},
	{key: "arweave.bundler", env: "UCL_BUNDLER", kind: kURL, doc: "bundler (Turbo upload API) that sync push uploads through, paying no AR, e.g. https://upload.ardrive.io"},
	{key: "arweave.wallet_path", env: "UCL_WALLET", doc: "Arweave wallet JWK (default DIR/wallet.json)"},
	{key: "index.embedder", env: "UCL_EMBEDDER", def: "hash", kind: kChoice, choices: []string{"hash", "static", "ollama", "openai"}, doc: "embedder of the vector projection"},
	{key: "index.embed_url", env: "UCL_EMBED_URL", kind: kURL, doc: "embedding server base URL"},
	{key: "index.embed_model", env: "UCL_EMBED_MODEL", doc: "embedding model name (static: the model2vec model directory)"},
	{key: "consolidate.model", env: "UCL_CONSOLIDATE_MODEL", doc: "chat model that extracts facts (ucl consolidate); empty: consolidation is off"},
	{key: "consolidate.endpoint", env: "UCL_CONSOLIDATE_ENDPOINT", kind: kURL, doc: "OpenAI-compatible base URL (with /v1) of that model (default: proxy.upstream)"},
	{key: "consolidate.timeout", env: "UCL_CONSOLIDATE_TIMEOUT", def: "2m", kind: kDuration, doc: "bound of one consolidation request"},
	{key: "consolidate.every", env: "UCL_CONSOLIDATE_EVERY", kind: kDuration, doc: "the owner (ucl serve, ucl mcp) consolidates this often; empty: never"},
}

// UpstreamKeyEnv is read first for the upstream API key.
const UpstreamKeyEnv = "UCL_UPSTREAM_API_KEY"

// ConsolidateKeyEnv holds the consolidation model's API key.
const ConsolidateKeyEnv = "UCL_CONSOLIDATE_API_KEY"

// Setting is one effective value and where it came from.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"` // default, file, env (with the variable), flag
	Env    string `json:"env,omitempty"`
	Secret bool   `json:"secret,omitempty"`
	Doc    string `json:"doc,omitempty"`
}

// Config is the effective configuration.
type Config struct {
	// Path is the config file read ("" when there is none).
	Path     string
	settings map[string]Setting
	// UpstreamKey is the upstream API key ("" : none). Never print it.
	UpstreamKey string
	// ConsolidateKey is the consolidation model's API key
	// (ConsolidateKeyEnv, else UpstreamKey). Never print it.
	ConsolidateKey string
	keySource      string
}

// Load resolves every setting: flags (by key, only those given on the
// command line) over the environment (getenv) over DIR/ucl.toml over the
// defaults. A missing file is not an error.
func Load(dir string, getenv func(string) string, flags map[string]string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := &Config{settings: map[string]Setting{}}
	file, err := readFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	if file != nil {
		c.Path = filepath.Join(dir, FileName)
	}
	known := map[string]bool{}
	for _, sp := range specs {
		known[sp.key] = true
	}
	for k := range flags {
		if !known[k] {
			return nil, fmt.Errorf("flag for %s: %w: unknown key", k, ErrBadConfig)
		}
	}
	for _, sp := range specs {
		st := Setting{Key: sp.key, Value: sp.def, Source: SourceDefault, Doc: sp.doc}
		if v, ok := file[sp.key]; ok {
			st.Value, st.Source = v, SourceFile
		}
		if v := getenv(sp.env); v != "" {
			st.Value, st.Source, st.Env = v, SourceEnv, sp.env
		}
		if v, ok := flags[sp.key]; ok {
			st.Value, st.Source, st.Env = v, SourceFlag, ""
		}
		if err := sp.check(st.Value); err != nil {
			where := st.Source
			switch st.Source {
			case SourceFile:
				where = c.Path
			case SourceEnv:
				where = "environment variable " + sp.env
			}
			return nil, fmt.Errorf("%s (from %s): %w: %v", sp.key, where, ErrBadConfig, err)
		}
		c.settings[sp.key] = st
	}
	if v := getenv(UpstreamKeyEnv); v != "" {
		c.UpstreamKey, c.keySource = v, UpstreamKeyEnv
	} else if name := c.String("proxy.upstream_api_key_env"); name != "" && getenv(name) != "" {
		c.UpstreamKey, c.keySource = getenv(name), name
	}
	c.ConsolidateKey = getenv(ConsolidateKeyEnv)
	if c.ConsolidateKey == "" {
		c.ConsolidateKey = c.UpstreamKey
	}
	return c, nil
}

func (sp spec) check(v string) error {
	switch sp.kind {
	case kInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < sp.min {
			return fmt.Errorf("%d is below the minimum %d", n, sp.min)
		}
	case kDuration:
		if v == "" && sp.def == "" {
			return nil // an optional duration, off
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%q is not a positive duration (e.g. 30s, 5m)", v)
		}
	case kURL:
		if v == "" {
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q is not an http(s) URL", v)
		}
	case kURLList:
		for _, el := range strings.Split(v, ",") {
			if el = strings.TrimSpace(el); el == "" {
				continue
			}
			u, err := url.Parse(el)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%q is not an http(s) URL", el)
			}
		}
	case kChoice:
		for _, c := range sp.choices {
			if v == c {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", v, strings.Join(sp.choices, ", "))
	}
	return nil
}

// readFile reads the TOML file into section.key → value text; nil when
// the file does not exist.
func readFile(path string) (map[string]string, error) {
	var raw map[string]any
	md, err := toml.DecodeFile(path, &raw)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: line %d: %w: %s", path, pe.Position.Line, ErrBadConfig, pe.Message)
		}
		return nil, fmt.Errorf("%s: %w: %v", path, ErrBadConfig, err)
	}
	types := map[string]kind{}
	for _, sp := range specs {
		types[sp.key] = sp.kind
	}
	out := map[string]string{}
	for _, k := range md.Keys() {
		if len(k) == 1 {
			if _, isTable := raw[k[0]].(map[string]any); !isTable {
				return nil, fmt.Errorf("%s: %s: %w: unknown key (settings live in [proxy], [retrieval], [arweave], [index], [consolidate])", path, k[0], ErrBadConfig)
			}
			continue
		}
		key := k.String()
		kd, ok := types[key]
		if !ok || len(k) != 2 {
			return nil, fmt.Errorf("%s: %s: %w: unknown key", path, key, ErrBadConfig)
		}
		v := raw[k[0]].(map[string]any)[k[1]]
		switch x := v.(type) {
		case string:
			if kd == kInt {
				return nil, fmt.Errorf("%s: %s: %w: want an integer, got the string %q", path, key, ErrBadConfig, x)
			}
			out[key] = x
		case []any:
			if kd != kURLList {
				return nil, fmt.Errorf("%s: %s: %w: want a string, got a list", path, key, ErrBadConfig)
			}
			els := make([]string, len(x))
			for i, e := range x {
				str, ok := e.(string)
				if !ok || strings.Contains(str, ",") {
					return nil, fmt.Errorf("%s: %s: %w: element %d is not a URL string", path, key, ErrBadConfig, i+1)
				}
				els[i] = str
			}
			out[key] = strings.Join(els, ",")
		case int64:
			if kd != kInt {
				return nil, fmt.Errorf("%s: %s: %w: want a string, got %d", path, key, ErrBadConfig, x)
			}
			out[key] = strconv.FormatInt(x, 10)
		default:
			return nil, fmt.Errorf("%s: %s: %w: unsupported value %v (%s)", path, key, ErrBadConfig, v, md.Type(k...))
		}
	}
	return out, nil
}

// String returns a setting's value.
func (c *Config) String(key string) string {
	st, ok := c.settings[key]
	if !ok {
		panic("config: unknown key " + key) // a programming error, not input
	}
	return st.Value
}

// Int returns an integer setting (validated by Load).
func (c *Config) Int(key string) int {
	n, err := strconv.Atoi(c.String(key))
	if err != nil {
		panic("config: " + key + " is not an integer setting")
	}
	return n
}

// Duration returns a duration setting (validated by Load).
func (c *Config) Duration(key string) time.Duration {
	d, err := time.ParseDuration(c.String(key))
	if err != nil {
		panic("config: " + key + " is not a duration setting")
	}
	return d
}

// Settings lists every setting in display order, then the upstream key,
// masked.
func (c *Config) Settings() []Setting {
	out := make([]Setting, 0, len(specs)+1)
	for _, sp := range specs {
		out = append(out, c.settings[sp.key])
	}
	key := Setting{Key: "proxy.upstream_api_key", Value: "", Source: SourceDefault, Secret: true,
		Doc: "from " + UpstreamKeyEnv + ", else the variable proxy.upstream_api_key_env names; never from the file"}
	if c.UpstreamKey != "" {
		key.Value, key.Source, key.Env = Mask(c.UpstreamKey), SourceEnv, c.keySource
	}
	return append(out, key)
}

// Mask shows that a secret is set without showing it.
func Mask(secret string) string {
	if secret == "" {
		return ""
	}
	return fmt.Sprintf("******** (%d characters)", len(secret))
}

// Keys lists the setting keys, sorted.
func Keys() []string {
	out := make([]string, len(specs))
	for i, sp := range specs {
		out[i] = sp.key
	}
	sort.Strings(out)
	return out
}
