package summary

import (
	"testing"

	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func TestShowSample(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("prints a sample with -v")
	}
	x := openT(t, t.TempDir(), Options{})
	applyAll(t, x, projtest.Events(1, 400), 0)
	s := all(t, x)
	for _, v := range s[:2] {
		t.Logf("%+v", v)
	}
}
