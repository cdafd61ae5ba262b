package shaders

import (
	"fmt"
	"strings"
	"testing"
)

func TestDFastConfigRoundTrip(t *testing.T) {
	for _, c := range append(DFastSweep(), DFastConfig{BM: 32, BN: 64, BK: 8, TM: 2, TN: 4, DoubleBuffer: true, Unaligned: true},
		DFastConfig{BM: 32, BN: 32, BK: 4, TM: 1, TN: 2, Unaligned: true}, DFastConfig{BM: 32, BN: 32, BK: 4, TM: 4, TN: 2, PadA: 4, Tex: true},
		DFastConfig{BM: 64, BN: 96, BK: 8, TM: 8, TN: 6, WarpX: 4, DoubleBuffer: true, Tex: true, Ahead: true},
		DFastConfig{BM: 32, BN: 64, BK: 2, TM: 2, TN: 4, DoubleBuffer: true, Unaligned: true, Ahead: true}) {
		back, err := ParseDFastConfig(c.String())
		if err != nil || back != c {
			t.Errorf("ParseDFastConfig(%q) = %+v, %v", c.String(), back, err)
		}
		k, err := LookupFloat64("dfast:" + c.String())
		if err != nil || k.Spec() != "dfast:"+c.String() || k.TileM != c.BM || k.TileN != c.BN || k.StepK != c.BK || k.Threads != c.Threads() {
			t.Fatalf("LookupFloat64(dfast:%v) = %+v, %v", c, k, err)
		}
		vec, align := 1, 2
		if c.Unaligned {
			vec, align = 0, 1
		}
		tex, ahead := 0, 0
		if c.Tex {
			tex = 1
		}
		if c.Ahead {
			ahead = 1
		}
		if k.Align != align || !strings.HasPrefix(k.Source, "#version 430 core\n") || !strings.Contains(k.Source, fmt.Sprintf("#define VEC %d\n", vec)) ||
			!strings.Contains(k.Source, fmt.Sprintf("#define THREADS %d\n#define PADA %d\n#define WX %d\n#define TEX %d\n#define AHEAD %d\n", c.Threads(), c.PadA, c.WarpX, tex, ahead)) ||
			k.SourceES != "" || k.Textures != c.Tex || k.SharedBytes != c.SharedBytes() {
			t.Errorf("%v: Align %d, Textures %v, or its source does not start with its defines, or it has GLSL ES text", c, k.Align, k.Textures)
		}
	}
	if k, err := LookupFloat64("dfast"); err != nil || k.Config != DefaultDFast.String() {
		t.Errorf("LookupFloat64(dfast) = %+v, %v", k, err)
	}
}

// TestDFastCandidatesFit: every candidate fits the 48 KiB of shared
// memory that NVIDIA's OpenGL gives a work group, and has 64 to 256
// invocations.
func TestDFastCandidatesFit(t *testing.T) {
	seen := map[DFastConfig]bool{}
	for _, c := range DFastCandidates() {
		if c.Check() != nil || c.SharedBytes() > 48<<10 || c.Threads() < 64 || c.Threads() > 256 || seen[c] {
			t.Errorf("candidate %v: %v, %d bytes of shared memory, %d invocations, repeated %v", c, c.Check(), c.SharedBytes(), c.Threads(), seen[c])
		}
		seen[c] = true
	}
	if DefaultDFast.SharedBytes() != 32<<10 {
		t.Errorf("the default's shared memory is %d bytes, want 32 KiB", DefaultDFast.SharedBytes())
	}
}

// TestDFastSweepFits: the sweep starts with every candidate, repeats no
// configuration, and each fits NVIDIA's 48 KiB of shared memory with 64
// to 512 invocations; each option of the grammar is in it.
func TestDFastSweepFits(t *testing.T) {
	sweep, cands := DFastSweep(), DFastCandidates()
	if len(sweep) < 20 || len(sweep) > 30 {
		t.Errorf("%d configurations in the sweep, want 20 to 30", len(sweep))
	}
	seen := map[DFastConfig]bool{}
	var tex, warp, pad bool
	for i, c := range sweep {
		if i < len(cands) && c != cands[i] {
			t.Errorf("sweep[%d] = %v, want the candidate %v", i, c, cands[i])
		}
		if c.Check() != nil || c.SharedBytes() > 48<<10 || c.Threads() < 64 || c.Threads() > 512 || seen[c] {
			t.Errorf("sweep %v: %v, %d bytes of shared memory, %d invocations, repeated %v", c, c.Check(), c.SharedBytes(), c.Threads(), seen[c])
		}
		seen[c] = true
		tex, warp, pad = tex || c.Tex, warp || c.WarpX != 0, pad || c.PadA != 0
	}
	if !tex || !warp || !pad {
		t.Errorf("the sweep lacks an option: _tex %v, _w %v, _p %v", tex, warp, pad)
	}
}

// TestDFastSharedBytes: A's padding counts in each buffer of A.
func TestDFastSharedBytes(t *testing.T) {
	c := DFastConfig{BM: 128, BN: 128, BK: 8, TM: 8, TN: 8, PadA: 2, WarpX: 8, DoubleBuffer: true}
	if got, want := c.SharedBytes(), 2*8*(128*10+8*128); got != want {
		t.Errorf("%v: %d bytes of shared memory, want %d", c, got, want)
	}
}

func TestDFastConfigRejects(t *testing.T) {
	for _, s := range []string{"128x128x8", "128x128x8_8", "128x128x7_8x8", "128x128x8_8x7", "128x100x8_8x8", "256x256x8_4x4", "8x8x8_4x4",
		"128x128x8_8x8_u_db", "128x128x8_8x8_db_db", "128x128x8_8x8_at", "128x128x8_8x8_p3", "+128x128x8_8x8", "0128x128x8_8x8",
		"2048x2x2_64x2", "axbxc_dxe", "0x0x0_0x0",
		// The new options: out of order, repeated, zero, odd, signed,
		// a warp that does not tile the group, textures with _u.
		"128x128x8_8x8_w8_p2", "128x128x8_8x8_tex_db", "128x128x8_8x8_db_tex_tex", "128x128x8_8x8_p0", "128x128x8_8x8_w0",
		"128x128x8_8x8_p-2", "128x128x8_8x8_p02", "128x128x8_8x8_w+8", "128x128x8_8x8_w3", "128x128x8_8x8_w32", "128x128x8_8x8_w64",
		"64x64x8_8x8_w16", "128x128x8_8x8_db_u_tex", "128x128x8_8x8_p", "128x128x8_8x8_w",
		// _ahead: last, once, with _db, an even TM and no padding.
		"128x128x8_8x8_ahead", "128x128x8_8x8_ahead_db", "128x128x8_8x8_db_ahead_tex", "128x128x8_8x8_db_ahead_ahead",
		"96x128x8_3x8_db_ahead", "128x128x8_8x8_p2_db_ahead"} {
		if _, err := ParseDFastConfig(s); err == nil {
			t.Errorf("ParseDFastConfig(%q): no error", s)
		}
	}
	for _, spec := range []string{"fast", "dfast:", "dfast:128x128x8_8x8_u_tex", "dfastx"} {
		if _, err := LookupFloat64(spec); err == nil {
			t.Errorf("LookupFloat64(%q): no error", spec)
		}
	}
	// The float32 paths never get a float64 kernel.
	if _, err := Lookup("dfast"); err == nil {
		t.Error("Lookup(dfast): no error")
	}
}

// FuzzLookupFloat64: no float64 spec panics, and an accepted one reads
// back as itself and makes source text.
func FuzzLookupFloat64(f *testing.F) {
	for _, s := range []string{"dfast", "dfast:128x128x8_8x8_db", "dfast:64x64x8_4x4_db_u", "dfast:99999999999x4x4_4x4", "dfast:2x2x2_1x2", "fast",
		"dfast:128x128x8_8x8_p2_w8_db_tex", "dfast:64x64x8_4x4_w4_u"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		k, err := LookupFloat64(spec)
		if err != nil {
			return
		}
		if k.Source == "" || k.TileM < 1 || k.TileN < 1 || k.Threads < 32 || k.Threads > 1024 {
			t.Fatalf("LookupFloat64(%q) = %+v", spec, k)
		}
		if back, err := LookupFloat64(k.Spec()); err != nil || back.Spec() != k.Spec() {
			t.Fatalf("LookupFloat64(%q).Spec() = %q does not read back: %v", spec, k.Spec(), err)
		}
	})
}

// TestFloat64Kernels: dfast and Reduce64 say they compute in float64 and
// have no GLSL ES text; Reduce64 is reduce.comp over dvec2s, and Reduce,
// and every float32 kernel, stays float32.
func TestFloat64Kernels(t *testing.T) {
	d, err := LookupFloat64("dfast")
	if err != nil {
		t.Fatal(err)
	}
	r := Reduce64()
	for _, k := range []Kernel{d, r} {
		if !k.Float64 || k.SourceES != "" {
			t.Errorf("%s: Float64 %v, SourceES %d bytes", k.Spec(), k.Float64, len(k.SourceES))
		}
	}
	if r.File != "reduce.comp" || r.Spec() == Reduce().Spec() || !strings.Contains(r.Source, "#version 430 core\n#define PARTIAL dvec2\n") {
		t.Errorf("Reduce64 is not reduce.comp over dvec2s: %s, %s", r.Spec(), r.File)
	}
	for _, k := range []Kernel{Reduce(), GEMM(), Fill(), Transpose()} {
		if k.Float64 {
			t.Errorf("%s says it is float64", k.Spec())
		}
	}
}
