// Command ucl is the Unlimited Context Log: a permanent, encrypted,
// verifiable memory for LLM tools. See README.md.
package main

import (
	"os"
)

func main() {
	stop := startCPUProfile(os.Stderr)
	stopMem := startMemProfile(os.Stderr)
	code := run(os.Args, os.Stdin, os.Stdout, os.Stderr)
	stopMem()
	stop()
	os.Exit(code)
}
