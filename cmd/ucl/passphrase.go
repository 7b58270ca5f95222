package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Where a sealed vault key's passphrase comes from: the environment
// (non-interactive use: scripts, `ucl mcp` under an editor, `ucl serve`
// as a service), else the OS keyring where one is reachable and holds it
// (keyring.go), else a prompt on the controlling terminal (never standard
// input, which may carry the command's own input).
const (
	passphraseEnv    = "UCL_PASSPHRASE"
	newPassphraseEnv = "UCL_NEW_PASSPHRASE" // `ucl keys seal` on a sealed key: the new one
)

// errNoPassphrase is returned when a passphrase is needed and there is
// neither the environment variable nor a terminal to ask on.
var errNoPassphrase = errors.New("no passphrase: " + passphraseEnv + " is not set and there is no terminal to ask on")

// passphrase returns the engine's passphrase source: called only when the
// vault key file is sealed.
func passphrase(c *cli.Context) func() ([]byte, error) {
	return passphraseFor(storeDir(c), func(msg string) ([]byte, error) { return prompt(c, msg) })
}

// passphraseFor is passphrase for the store in dir, asking with ask.
func passphraseFor(dir string, ask func(msg string) ([]byte, error)) func() ([]byte, error) {
	return func() ([]byte, error) {
		if p := os.Getenv(passphraseEnv); p != "" {
			return []byte(p), nil
		}
		if p, ok := keyringGet(dir); ok {
			return p, nil
		}
		return ask(fmt.Sprintf("passphrase of the vault key of %s: ", dir))
	}
}

// prompt reads a line without echo on the controlling terminal.
func prompt(c *cli.Context, msg string) ([]byte, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, errNoPassphrase
	}
	defer tty.Close()
	if !term.IsTerminal(int(tty.Fd())) {
		return nil, errNoPassphrase
	}
	fmt.Fprint(tty, msg)
	p, err := term.ReadPassword(int(tty.Fd()))
	fmt.Fprintln(tty)
	if err != nil {
		return nil, fmt.Errorf("read passphrase: %w", err)
	}
	return p, nil
}

// newPassphrase is the passphrase `ucl keys seal` seals under:
// UCL_NEW_PASSPHRASE, else UCL_PASSPHRASE when the key is not sealed yet,
// else asked twice on the terminal.
func newPassphrase(c *cli.Context, sealed bool) ([]byte, error) {
	if p := os.Getenv(newPassphraseEnv); p != "" {
		return []byte(p), nil
	}
	if p := os.Getenv(passphraseEnv); p != "" && !sealed {
		return []byte(p), nil
	}
	p, err := prompt(c, "new passphrase: ")
	if err != nil {
		return nil, err
	}
	again, err := prompt(c, "the same again: ")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(p, again) {
		return nil, errors.New("the two passphrases differ; nothing was changed")
	}
	return p, nil
}
