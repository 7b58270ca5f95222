package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsWithoutFile(t *testing.T) {
	c, err := Load(t.TempDir(), envOf(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != "" || c.String("proxy.listen") != "127.0.0.1:8080" || c.Int("retrieval.max_context_tokens") != 2000 || c.UpstreamKey != "" {
		t.Fatalf("defaults: %+v", c.Settings())
	}
	for _, s := range c.Settings() {
		if s.Source != SourceDefault {
			t.Errorf("%s from %s", s.Key, s.Source)
		}
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, `
[proxy]
listen = "127.0.0.1:9000"
upstream = "http://file.example/v1"
upstream_api_key_env = "MY_LLM_KEY"

[retrieval]
max_context_tokens = 1500
recency_window = 4
similarity_top_k = 3

[arweave]
gateway = "http://localhost:1984"

[index]
embedder = "ollama"
embed_url = "http://localhost:11434"
embed_model = "nomic-embed-text"
`)
	env := map[string]string{"UCL_UPSTREAM": "http://env.example/v1", "UCL_RECENCY_WINDOW": "9", "MY_LLM_KEY": "sk-from-named-var"}
	c, err := Load(dir, envOf(env), map[string]string{"proxy.upstream": "http://flag.example/v1", "retrieval.similarity_top_k": "5"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"proxy.listen":                 {"127.0.0.1:9000", SourceFile},
		"proxy.upstream":               {"http://flag.example/v1", SourceFlag},
		"retrieval.recency_window":     {"9", SourceEnv},
		"retrieval.similarity_top_k":   {"5", SourceFlag},
		"retrieval.max_context_tokens": {"1500", SourceFile},
		"index.embedder":               {"ollama", SourceFile},
		"proxy.default_session":        {"proxy", SourceDefault},
		"proxy.upstream_api_key":       {Mask("sk-from-named-var"), SourceEnv},
	}
	for _, s := range c.Settings() {
		if w, ok := want[s.Key]; ok && (s.Value != w[0] || s.Source != w[1]) {
			t.Errorf("%s = %q from %s, want %q from %s", s.Key, s.Value, s.Source, w[0], w[1])
		}
		if strings.Contains(s.Value, "sk-from-named-var") {
			t.Errorf("%s shows the secret", s.Key)
		}
	}
	if c.UpstreamKey != "sk-from-named-var" {
		t.Fatalf("key %q", c.UpstreamKey)
	}
	// UCL_UPSTREAM_API_KEY wins over the named variable.
	env[UpstreamKeyEnv] = "sk-ucl"
	if c, err = Load(dir, envOf(env), nil); err != nil || c.UpstreamKey != "sk-ucl" {
		t.Fatalf("key %q %v", c.UpstreamKey, err)
	}
}

func TestBadSettingsNameTheKey(t *testing.T) {
	cases := []struct {
		file  string
		env   map[string]string
		flags map[string]string
		want  string // in the message
	}{
		{file: "[proxy]\nlisten = \"x\"\nlistne = \"y\"\n", want: "proxy.listne"},
		{file: "[proxy]\nupstream_api_key = \"sk-x\"\n", want: "proxy.upstream_api_key"},
		{file: "[retreival]\nrecency_window = 3\n", want: "retreival"},
		{file: "top = 1\n", want: "top"},
		{file: "[retrieval]\nmax_context_tokens = \"lots\"\n", want: "retrieval.max_context_tokens"},
		{file: "[retrieval]\nmax_context_tokens = 0\n", want: "retrieval.max_context_tokens"},
		{file: "[proxy]\nlisten = 8080\n", want: "proxy.listen"},
		{file: "[proxy]\nupstream = \"ftp://x\"\n", want: "proxy.upstream"},
		{file: "[index]\nembedder = \"bert\"\n", want: "index.embedder"},
		{file: "[proxy\n", want: "ucl.toml: line "},
		{env: map[string]string{"UCL_SIMILARITY_TOP_K": "many"}, want: "UCL_SIMILARITY_TOP_K"},
		{env: map[string]string{"UCL_UPSTREAM_TIMEOUT": "-1s"}, want: "proxy.upstream_timeout"},
		{flags: map[string]string{"proxy.nope": "1"}, want: "proxy.nope"},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		if tc.file != "" {
			writeFile(t, dir, tc.file)
		}
		_, err := Load(dir, envOf(tc.env), tc.flags)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %v %v: error %v, want ErrBadConfig naming %q", tc.file, tc.env, tc.flags, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-x") {
			t.Errorf("the error echoes a secret: %v", err)
		}
	}
}

func TestArweaveGatewayList(t *testing.T) {
	dir := t.TempDir()
	toml := "[arweave]\ngateways = [\"https://a.example\", \"http://127.0.0.1:1984\"]\ngraphql = \"https://g.example/graphql\"\nbundler = \"https://upload.ardrive.io\"\n"
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.String("arweave.gateways"); got != "https://a.example,http://127.0.0.1:1984" {
		t.Fatalf("gateways = %q", got)
	}
	if c.String("arweave.bundler") != "https://upload.ardrive.io" || c.String("arweave.graphql") != "https://g.example/graphql" {
		t.Fatalf("bundler/graphql = %q %q", c.String("arweave.bundler"), c.String("arweave.graphql"))
	}
	for _, bad := range []string{"gateways = [\"ftp://x\"]", "gateways = [1]", "bundler = \"nope\""} {
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte("[arweave]\n"+bad+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir, func(string) string { return "" }, nil); !errors.Is(err, ErrBadConfig) {
			t.Fatalf("%s: err = %v, want ErrBadConfig", bad, err)
		}
	}
}
