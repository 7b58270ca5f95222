package main

import "github.com/unlimitedcontext/ucl"

// engineClass is err's class as the engine declares it (ucl.ClassOf): the
// CLI maps it to an exit status and adds its hint, it never re-derives it.
func engineClass(err error) string { return string(ucl.ClassOf(err)) }
