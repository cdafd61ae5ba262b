package tuning

import (
	"strings"
	"testing"

	"github.com/glmul/glmul/shaders"
)

// TestModelH100: from what OpenGL reports of the H100 (and the H200: the
// same limits), the model chooses the configurations NVIDIA's built-in
// measured best, read through storage buffers: buffer textures (_tex) are
// for the NVIDIA driver's bounds checks, which other drivers may not make.
func TestModelH100(t *testing.T) {
	ch := Model(Facts{SharedMemory: 49152, Invocations: 1024})
	ssbo := func(s string) string { return strings.TrimSuffix(s, "_tex") }
	if ch.Default != ssbo(NVIDIADefault) || ch.Natural != ssbo(NVIDIANatural) || ch.SmallGrid != ssbo(NVIDIASmallGrid) {
		t.Errorf("Model(H100) = %+v, want %s, %s, %s", ch, NVIDIADefault, NVIDIANatural, NVIDIASmallGrid)
	}
	// NVIDIA's wide natural is the 128×256 twin of this 256×128 (the
	// model's taller block): the same reads per FMA.
	if ch.NaturalWide != "fast:256x128x16_16x8_db" {
		t.Errorf("Model(H100).NaturalWide = %s, want fast:256x128x16_16x8_db", ch.NaturalWide)
	}
	if !strings.HasPrefix(ch.Source, "device model") || !strings.Contains(ch.Source, "49152 bytes") {
		t.Errorf("source %q does not say it is the model's, from what", ch.Source)
	}
}

// TestModelFits: over a range of devices' limits, every configuration the
// model chooses fits them and keeps the model's own rules; where nothing
// of the fast family fits, it says the generic default.
func TestModelFits(t *testing.T) {
	for _, shared := range []int{8192, 16384, 32768, 49152, 65536} {
		for _, inv := range []int{128, 256, 384, 512, 1024} {
			f := Facts{SharedMemory: shared, Invocations: inv}
			ch := Model(f)
			check := func(what, spec string, natural, small bool) shaders.FastConfig {
				c, err := shaders.ParseFastConfig(strings.TrimPrefix(spec, "fast:"))
				if err != nil {
					t.Fatalf("%+v: %s %q: %v", f, what, spec, err)
				}
				if c.Threads() > inv || c.SharedBytes() > shared || ModelRegistersOf(c) > ModelRegisters || c.TN > ModelMaxTN || c.BK > ModelMaxBK {
					t.Errorf("%+v: %s %s does not fit (%d invocations, %d bytes, %d registers)", f, what, spec, c.Threads(), c.SharedBytes(), ModelRegistersOf(c))
				}
				if natural && c.TransA || small && (c.BM != 64 || c.BN != 64) {
					t.Errorf("%+v: %s %s", f, what, spec)
				}
				return c
			}
			def := check("default", ch.Default, false, false)
			if inv >= ModelMinThreads && def.Threads() < ModelMinThreads {
				t.Errorf("%+v: default %s has %d invocations where %d fit", f, ch.Default, def.Threads(), ModelMinThreads)
			}
			if def.TransA != (ch.Natural != "") {
				t.Errorf("%+v: default %s with natural %q", f, ch.Default, ch.Natural)
			}
			if ch.Natural != "" {
				if nat := check("natural", ch.Natural, true, false); 2*nat.BM*nat.BN > def.BM*def.BN {
					t.Errorf("%+v: natural %s wider than half of %s", f, ch.Natural, ch.Default)
				}
			}
			if def.TransA != (ch.NaturalWide != "") {
				t.Errorf("%+v: default %s with wide natural %q", f, ch.Default, ch.NaturalWide)
			}
			if ch.NaturalWide != "" {
				if wide := check("wide natural", ch.NaturalWide, true, false); wide.BM*wide.BN != def.BM*def.BN {
					t.Errorf("%+v: wide natural %s not of %s's area", f, ch.NaturalWide, ch.Default)
				}
			}
			if ch.SmallGrid != "" {
				check("small grid", ch.SmallGrid, false, true)
			}
		}
	}
	if ch := Model(Facts{SharedMemory: 1024, Invocations: 64}); ch.Default != GenericDefault || ch.Natural != "" || ch.SmallGrid != "" || !strings.HasPrefix(ch.Source, "generic default") {
		t.Errorf("nothing fits 1 KiB of shared memory, yet Model chose %+v", ch)
	}
}

// TestModelPrefers: the model's order on pairs it must tell apart.
func TestModelPrefers(t *testing.T) {
	parse := func(s string) shaders.FastConfig {
		c, err := shaders.ParseFastConfig(s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, p := range [][2]string{
		{"128x128x8_8x8", "128x128x8_8x4"},              // fewer shared reads per FMA
		{"256x128x8_16x8", "128x128x8_16x8"},            // fewer global reads per FMA
		{"128x128x8_8x8_db", "128x128x8_8x8"},           // double-buffered
		{"256x128x16_16x8_db_at", "256x128x16_16x8_db"}, // A read transposed
		{"128x128x16_8x8_db", "128x128x8_8x8_db"},       // deeper K step
		{"256x128x16_16x8_db_at", "128x256x16_16x8_db_at"},
	} {
		if bigFirst(parse(p[0]), parse(p[1])) >= 0 || bigFirst(parse(p[1]), parse(p[0])) <= 0 {
			t.Errorf("the model does not put %s before %s", p[0], p[1])
		}
	}
	if smallFirst(parse("64x64x8_8x4_db"), parse("64x64x16_8x4_db")) >= 0 {
		t.Error("the small grid does not prefer the shallower K step")
	}
}

// TestModelRegisters: the estimate counts what the kernel holds.
func TestModelRegisters(t *testing.T) {
	for _, c := range []struct {
		spec string
		want int
	}{
		// 128 accumulators, 16 + 8 floats of fragments, 384·16/256 staged, 32
		{"256x128x16_16x8_db_at", 128 + 24 + 24 + 32},
		// A as it is, from 64 accumulators with TM ≥ TN (fast.comp's BH):
		// B for four k and a vec4 of A, 4·8 + 4
		{"256x128x16_16x8_db", 128 + 36 + 24 + 32},
		{"128x128x16_8x8_db", 64 + 36 + 16 + 32},
		// else a vec4 along K per row: 4·8 + 16, 4·4 + 4
		{"128x256x8_8x16_db", 128 + 48 + 12 + 32},
		{"64x64x8_4x4_db", 16 + 20 + 4 + 32},
	} {
		c2, err := shaders.ParseFastConfig(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := ModelRegistersOf(c2); got != c.want {
			t.Errorf("ModelRegistersOf(%s) = %d, want %d", c.spec, got, c.want)
		}
	}
}
