package ucl

import (
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
)

// Defaults, in one place. A zero field of Options or of a request means
// the default below.
const (
	// DefaultGateway is the Arweave gateway used when a request names none.
	DefaultGateway = "https://arweave.net"
	// DefaultEmbedTimeout bounds one request to an HTTP embedding server.
	DefaultEmbedTimeout = time.Minute
	// DefaultChunkTokens is where documents and tool calls are split.
	DefaultChunkTokens = log.DefaultChunkTokens
	// AppendBlock is how many events one atomic batch of Append holds.
	// Inputs up to this size are all-or-nothing; larger ones are validated
	// completely first and then written in blocks of this size.
	AppendBlock = 50_000
	// DefaultSessionsLimit is how many sessions Sessions lists by default.
	DefaultSessionsLimit = 50
	// SocketName is the owner's API socket inside the store directory.
	SocketName = "ucl.sock"
)

// Embedder names accepted by EmbedderOptions.Kind.
const (
	EmbedderHash   = "hash"   // built-in, offline, deterministic
	EmbedderOllama = "ollama" // HTTP, Ollama protocol
	EmbedderOpenAI = "openai" // HTTP, OpenAI embeddings protocol
	EmbedderStatic = "static" // offline, a model2vec model directory (Model)
)

// EmbedderOptions choose the embedder of the vector projection. Every
// process opening a store must use the same embedder, or the vector
// projection's digest differs from a rebuild's.
type EmbedderOptions struct {
	// Kind is EmbedderHash (default), EmbedderStatic, EmbedderOllama or
	// EmbedderOpenAI.
	Kind string `json:"kind,omitempty"`
	// URL is the embedding server's base URL (HTTP embedders).
	URL string `json:"url,omitempty"`
	// Model is the embedding model name (HTTP embedders), or the model
	// directory (EmbedderStatic).
	Model string `json:"model,omitempty"`
	// Timeout bounds one embedding request (default DefaultEmbedTimeout).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Dim is the model's vector dimension; 0 asks the server once and
	// remembers the answer in DIR/embedder.json.
	Dim int `json:"dim,omitempty"`
}

// Options configure Open. The zero value opens DIR with its own vault key
// (when present), the built-in hash embedder and the store's durability.
type Options struct {
	// VaultKeyPath reads the vault key (or a recovery code file) from this
	// file instead of DIR/vault.key. A given path must work: Open fails
	// if it does not.
	VaultKeyPath string
	// Keys, when set, is the vault keyring itself (overrides VaultKeyPath).
	Keys *crypto.Keyring
	// Passphrase, when set, is called for the passphrase of a sealed vault
	// key file, only when the key file is sealed (a front end prompts, or
	// reads its environment). Without it a sealed key is ErrSealed.
	Passphrase func() ([]byte, error) `json:"-"`
	// Durability overrides the store's durability mode when non-nil.
	// log.None is UNSAFE: an acknowledged append can be lost on a crash.
	Durability *log.Durability
	// Embedder configures the vector projection.
	Embedder EmbedderOptions
	// Consolidate configures the model of Consolidate (off without one).
	Consolidate ConsolidateOptions
	// Warn receives what the engine repaired or rebuilt on its own (a
	// damaged projection reset from the log, staging leftovers of a crash
	// removed), for the user to see. Default: printed to standard error.
	Warn func(msg string)
	// Replicate, when set, must accept every commit of new events before
	// the append is acknowledged (log.Options.Replicate; internal/cluster
	// sets it). nil on the single-machine path.
	Replicate func(first uint64, raws [][]byte) error
	// MirrorHead, when set, bounds what Push uploads to Arweave: events
	// after the seq it returns stay local (internal/cluster returns the
	// last seq its stream acknowledged, so an event that may still be cut
	// as never acknowledged never reaches Arweave). nil: the log's head.
	MirrorHead func() uint64
	// RandomReads: this process reads the projections once, here and
	// there (a one-shot query): before a search, their file mappings are
	// advised MADV_RANDOM on Linux, so a file not in the page cache is
	// read a page at a time and not a read-ahead window at a time, and
	// the full-text segment pages their opening mapped are let go
	// (adviseOneShot). A long-lived process leaves the kernel's default.
	RandomReads bool
}

// InitOptions configure Init.
type InitOptions struct {
	// Keys is the vault keyring to use (nil: a new one).
	Keys *crypto.Keyring
	// Wallet is the Arweave wallet to import (nil: a new one).
	Wallet *arweave.Wallet
	// Durability is the store's default durability (zero: log.Sync).
	Durability log.Durability
	// Options are used to open the new store.
	Options Options
}

func (o EmbedderOptions) withDefaults() EmbedderOptions {
	if o.Kind == "" {
		o.Kind = EmbedderHash
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultEmbedTimeout
	}
	return o
}
