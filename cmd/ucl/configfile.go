package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unlimitedcontext/ucl/internal/config"
)

// fileConfig is the store's ucl.toml (with the environment over it), read
// once before the command runs (loadFileConfig); nil when it could not be read,
// which loadFileConfig has already reported.
var fileConfig *config.Config

// loadFileConfig reads DIR/ucl.toml for every command, so a bad setting is
// an error naming its key before anything runs, whatever the command.
func loadFileConfig(c *cli.Context) error {
	cfg, err := config.Load(storeDir(c), os.Getenv, nil)
	if err != nil {
		return configError(err, "fix the setting in "+config.FileName+" (ucl config show lists every key)")
	}
	fileConfig = cfg
	return nil
}

// setting is flag name's value: the flag (or its environment variable)
// when given, else the config file's key, else the flag's default. So
// flags override the environment, which overrides the file.
func setting(c *cli.Context, name, key string) string {
	if c.IsSet(name) || fileConfig == nil {
		return c.String(name)
	}
	for _, s := range fileConfig.Settings() {
		if s.Key == key && s.Source == config.SourceFile {
			return s.Value
		}
	}
	return c.String(name)
}

// serverTZ is the time zone the servers (serve, mcp, stores) read a
// request's time phrases in when it names none: cfg's [retrieval]
// timezone (or UCL_TIMEZONE), else the machine's, as ucl query's --tz.
func serverTZ(cfg *config.Config) (string, error) {
	tz := ""
	if cfg != nil {
		tz = cfg.String("retrieval.timezone")
	}
	if tz == "" {
		tz = "Local"
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return "", withHint(fmt.Errorf("bad time zone %q: %w", tz, err), "set [retrieval] timezone in "+config.FileName+" (or UCL_TIMEZONE) to an IANA name such as Europe/Lisbon, UTC or Local")
	}
	return tz, nil
}
