package shaders

import (
	"fmt"
	"strings"
	"testing"
)

func TestTiled32IsThePapersKernel(t *testing.T) {
	k, err := Lookup("tiled32")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#version 430",
		"local_size_x = 32, local_size_y = 32",
		"shared float As[BLOCK_SIZE][BLOCK_SIZE]",
		"shared float Bs[BLOCK_SIZE][BLOCK_SIZE]",
		"memoryBarrierShared();",
		"barrier();",
		"uniform uint x0;", "uniform uint y0;",
		"binding = 0", "binding = 1", "binding = 2",
	} {
		if !strings.Contains(k.Source, want) {
			t.Errorf("tiled32.comp lacks %q", want)
		}
	}
	if k.TileM != 32 || k.TileN != 32 {
		t.Errorf("tile = %d×%d, want 32×32", k.TileM, k.TileN)
	}
}

func TestFastConfigRoundTrip(t *testing.T) {
	for _, c := range []FastConfig{DefaultFast, {64, 128, 16, 4, 8, 4, false, 0, false, false}, {128, 128, 16, 8, 4, 0, true, 0, false, false}, {64, 64, 8, 4, 4, 4, true, 0, false, false},
		{128, 256, 8, 8, 8, 4, true, 8, false, false}, {128, 128, 8, 8, 8, 0, false, 16, false, false}, {64, 64, 8, 8, 4, 0, true, 4, false, false}, {64, 192, 8, 4, 4, 0, true, 0, false, false},
		{256, 128, 16, 16, 8, 0, true, 0, true, false}, {128, 128, 8, 8, 8, 0, false, 8, true, false}} {
		back, err := ParseFastConfig(c.String())
		if err != nil || back != c {
			t.Errorf("ParseFastConfig(%q) = %+v, %v", c.String(), back, err)
		}
		k, err := Lookup("fast:" + c.String())
		if err != nil || k.Spec() != "fast:"+c.String() || k.TileM != c.BM || k.TileN != c.BN || k.Align != 4 {
			t.Errorf("Lookup(fast:%v) = %+v, %v", c, k, err)
		}
		if k.TransposeA != c.TransA || strings.Contains(k.Source, "#define AT 1\n") != c.TransA || Natural(k.Spec()) != "fast:"+strings.TrimSuffix(c.String(), "_at") {
			t.Errorf("%v: TransposeA %v, Natural %q", c, k.TransposeA, Natural(k.Spec()))
		}
		if !strings.Contains(k.Source, fmt.Sprintf("#define BK %d\n", c.BK)) || !strings.Contains(k.Source, fmt.Sprintf("#define WX %d\n", c.warpX())) ||
			!strings.HasPrefix(k.Source, "#version 430") {
			t.Errorf("source of %v does not start with its defines", c)
		}
		// BH: natural tiles of 64 accumulators and more with TM ≥ TN.
		if bh := !c.TransA && c.TM*c.TN >= 64 && c.TM >= c.TN; c.HoldsB() != bh || !strings.Contains(k.Source, fmt.Sprintf("#define BH %d\n", boolInt(bh))) {
			t.Errorf("%v: HoldsB %v, want %v in the source too", c, c.HoldsB(), bh)
		}
	}
}

func TestFastConfigRejects(t *testing.T) {
	for _, s := range []string{"128x128x8", "128x128x8_8", "128x128x6_8x8", "128x100x8_8x8", "256x256x8_4x4", "8x8x8_4x4", "axbxc_dxe", "128x128x8_8x8_4",
		"128x128x8_8x8_w0", "128x128x8_8x8_w3", "128x128x8_8x8_w32", "128x128x8_8x8_db_w8", "128x128x8_8x8_w8_p4", "128x128x8_8x8_w8_w8", "128x64x8_8x8_w1",
		"128x128x8_8x8_p0", "128x128x8_8x8_db_db", "128x128x8_8x8_w8_x", "128x128x8_8x8_at_db", "128x128x8_8x8_p4_at", "128x128x8_8x8_db_at_at"} {
		if _, err := ParseFastConfig(s); err == nil {
			t.Errorf("ParseFastConfig(%q): no error", s)
		}
	}
}

func TestCPUConfig(t *testing.T) {
	for _, c := range append(CPUCandidates(), DefaultCPU, CPUConfig{LX: 1, LY: 1, TM: 1, TN: 4}) {
		back, err := ParseCPUConfig(c.String())
		if err != nil || back != c {
			t.Errorf("ParseCPUConfig(%q) = %+v, %v", c.String(), back, err)
		}
		k, err := Lookup("cpu:" + c.String())
		if err != nil || k.Spec() != "cpu:"+c.String() || k.TileM != c.LY*c.TM || k.TileN != c.LX*c.TN || !k.Textures || k.StepK != 4 ||
			!strings.Contains(k.Source, fmt.Sprintf("#define GN %d\n", c.TN/4)) {
			t.Errorf("Lookup(cpu:%v) = %+v, %v", c, k, err)
		}
	}
	if k, err := Lookup("cpu"); err != nil || k.Config != DefaultCPU.String() {
		t.Errorf("Lookup(cpu) = %+v, %v", k, err)
	}
	for _, s := range []string{"8x8", "8x8_8x6", "8x8_0x8", "0x8_8x8", "64x32_8x8", "8x8_16x32", "8x8_8x8_db", "8x8_8x8x", " 8x8_8x8", "08x8_8x8"} {
		if _, err := ParseCPUConfig(s); err == nil {
			t.Errorf("ParseCPUConfig(%q): no error", s)
		}
	}
	if es := ES(mustLookup(t, "cpu").Source); !strings.Contains(es, "#extension GL_OES_texture_buffer") || strings.Contains(ES(Tiled32().Source), "texture_buffer") {
		t.Error("ES: GL_OES_texture_buffer not enabled for the cpu kernel alone")
	}
}

func mustLookup(t *testing.T, spec string) Kernel {
	t.Helper()
	k, err := Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), "tiled32") {
		t.Fatalf("Lookup(nope) error = %v, want one listing the known kernels", err)
	}
}

// FuzzLookup: no kernel spec panics, and an accepted one reads back as
// itself (Spec) and makes source text.
func FuzzLookup(f *testing.F) {
	for _, s := range []string{"tiled32", "fast", "fast:128x128x8_8x8", "fast:128x256x8_8x8_db", "fast:0x0x0_0x0", "fast:", "tiled32:1", "fast:99999999999x4x4_4x4", "cpu", "cpu:8x8_8x8", "cpu:1x1_1x4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		k, err := Lookup(spec)
		if err != nil {
			return
		}
		if k.Source == "" || k.TileM < 1 || k.TileN < 1 {
			t.Fatalf("Lookup(%q) = %+v", spec, k)
		}
		if back, err := Lookup(k.Spec()); err != nil || back.Spec() != k.Spec() {
			t.Fatalf("Lookup(%q).Spec() = %q does not read back: %v", spec, k.Spec(), err)
		}
	})
}

// TestSourceES: every kernel carries its GLSL ES text, made by ES.
func TestSourceES(t *testing.T) {
	for _, k := range []Kernel{mustLookup(t, "fast"), mustLookup(t, "cpu"), mustLookup(t, "tiled32"), GEMM(), Reduce(), Fill(), SMCount(), Transpose(), TransposeStream(64), Copy(64), Batched()} {
		if k.SourceES == "" || k.SourceES != ES(k.Source) || !strings.Contains(k.SourceES, "#version 310 es") {
			t.Errorf("%s: SourceES is not ES(Source)", k.Spec())
		}
	}
}

// TestTexturesSpecs: a configuration's buffer-texture twin and its natural
// stand-in keep every other parameter.
func TestTexturesSpecs(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"fast:64x64x8_8x4_db", "fast:64x64x8_8x4_db_tex"},
		{"fast:256x128x16_16x8_db_at", "fast:256x128x16_16x8_db_at_tex"},
		{"fast:64x64x8_8x4_db_tex", "fast:64x64x8_8x4_db_tex"},
		{"tiled32", "tiled32"},
		{"cpu:8x8_8x8", "cpu:8x8_8x8"},
	} {
		if got := WithTextures(c.spec, true); got != c.want {
			t.Errorf("WithTextures(%s, true) = %s, want %s", c.spec, got, c.want)
		}
	}
	if got := WithTextures("fast:256x128x16_16x8_db_at_tex", false); got != "fast:256x128x16_16x8_db_at" {
		t.Errorf("WithTextures(_at_tex, false) = %s", got)
	}
	if got := Natural("fast:256x128x16_16x8_db_at_tex"); got != "fast:256x128x16_16x8_db_tex" {
		t.Errorf("Natural(_at_tex) = %s", got)
	}
	k, err := Lookup("fast:128x128x16_8x8_db_tex")
	if err != nil || !k.Textures || !strings.Contains(k.Source, "#define TEX 1\n") {
		t.Errorf("Lookup(_tex): Textures %v, %v", k.Textures, err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
