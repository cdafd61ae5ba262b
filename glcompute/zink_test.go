package glcompute

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestZinkInlinedUniforms runs the probe of zink's inlined-uniform fault
// (zinkProbe; docs/DRIVERS.md, "zink and float64"): every driver must run
// it right, zink too where its inlining is off (glcompute turns it off for
// the contexts it makes), and float64 is refused exactly where it fails.
// On zink with inlining on (ZINK_INLINE_UNIFORMS=1 in the environment) it
// must still fail, else the refusal is to be looked at again.
func TestZinkInlinedUniforms(t *testing.T) {
	d := openDevice(t, BackendEGL)
	if d.Info().ES {
		t.Skip("GLSL 4.30 compute shaders")
	}
	var wrong []int
	var err error
	d.call(func() { wrong, err = d.zinkProbe() })
	if err != nil {
		t.Fatal(err)
	}
	zink := strings.Contains(d.Info().Renderer, "zink")
	inlining := !slices.Contains([]string{"0", "n", "no", "f", "false"}, strings.ToLower(os.Getenv(zinkInlineEnv)))
	switch {
	case zink && inlining && len(wrong) == 0:
		t.Errorf("%s with %s=%q computes the probe right: see whether float64 products are right there too, and lift the refusal (checkFloat64, docs/DRIVERS.md, \"zink and float64\")", d.Info().Renderer, zinkInlineEnv, os.Getenv(zinkInlineEnv))
	case zink && inlining:
		t.Logf("%s: zink's inlined-uniform fault, as known: steps %v wrong", d.Info().Renderer, wrong)
	case len(wrong) > 0:
		t.Errorf("%s (%s=%q): the probe's steps %v came out wrong", d.Info().Renderer, zinkInlineEnv, os.Getenv(zinkInlineEnv), wrong)
	}
	if refused := errors.Is(d.float64Support(), errFloat64Refused); refused != (len(wrong) > 0) {
		t.Errorf("float64 refused %v where the probe had %d wrong steps", refused, len(wrong))
	}
}
