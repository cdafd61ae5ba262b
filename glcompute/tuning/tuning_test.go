package tuning

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glmul/glmul/shaders"
)

func TestSaveLoadPutLookup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "tuned.json")
	c, err := Load(path)
	if err != nil || len(c.Entries) != 0 {
		t.Fatalf("missing file: %v, %v", c, err)
	}
	d1 := Driver{"NVIDIA Corporation", "H100", "4.3.0 NVIDIA 580"}
	d2 := Driver{"Mesa", "llvmpipe", "4.5 Mesa 22.3.6"}
	c.Put(Entry{Driver: d1, Kernel: "fast:128x128x8_8x8", GFLOPS: 1, N: 2048, When: time.Unix(1, 0).UTC()})
	c.Put(Entry{Driver: d2, Kernel: "fast:64x64x8_4x4", GFLOPS: 2, N: 512})
	c.Put(Entry{Driver: d1, Kernel: "fast:128x128x16_8x4", GFLOPS: 3, N: 2048})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := back.Lookup(d1); !ok || e.Kernel != "fast:128x128x16_8x4" || e.GFLOPS != 3 || len(back.Entries) != 2 {
		t.Fatalf("after Put twice: %+v", back)
	}
	if _, ok := back.Lookup(Driver{"NVIDIA Corporation", "H100", "4.3.0 NVIDIA 590"}); ok {
		t.Fatal("entry matched another driver version")
	}
}

func TestCorruptCacheIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tuned.json")
	os.WriteFile(path, []byte("{not json"), 0o644)
	if _, err := Load(path); err == nil {
		t.Fatal("no error for a corrupt cache")
	}
}

func TestPathHonoursOverride(t *testing.T) {
	t.Setenv("GLMUL_TUNE_CACHE", "/x/y.json")
	if p, _ := Path(); p != "/x/y.json" {
		t.Fatalf("Path() = %q", p)
	}
}

func TestBuiltinsAreCandidates(t *testing.T) {
	cands := map[string]bool{}
	for _, c := range shaders.FastCandidates() {
		cands["fast:"+c.String()] = true
	}
	for _, c := range shaders.CPUCandidates() {
		cands["cpu:"+c.String()] = true
	}
	for _, k := range []string{NVIDIADefault, NVIDIASmallGrid, LlvmpipeDefault, GenericDefault} {
		if _, err := shaders.Lookup(k); err != nil || !cands[k] {
			t.Errorf("built-in %s is not one of the tuned candidates (so not conformance-tested): %v", k, err)
		}
	}
	h100 := Facts{SharedMemory: 49152, Invocations: 1024}
	if ch := Choose(Driver{Vendor: "NVIDIA Corporation"}, h100); ch.Default != NVIDIADefault || ch.SmallGrid != NVIDIASmallGrid || ch.Float64 != NVIDIAFloat64 {
		t.Errorf("NVIDIA gets %+v", ch)
	}
	if k, err := shaders.LookupFloat64(NVIDIAFloat64); err != nil || !slices.ContainsFunc(shaders.DFastSweep(), func(c shaders.DFastConfig) bool { return "dfast:"+c.String() == k.Spec() }) {
		t.Errorf("NVIDIA's float64 %s is not in dfast's sweep (so not conformance-tested on llvmpipe): %v", NVIDIAFloat64, err)
	}
	if ch := Choose(Driver{Vendor: "Mesa", Renderer: "llvmpipe (LLVM 15)"}, h100); ch.Default != LlvmpipeDefault || ch.SmallGrid != "" || ch.Natural != "" {
		t.Errorf("llvmpipe gets %+v", ch)
	}
	amd := Facts{SharedMemory: 65536, Invocations: 1024}
	if ch := Choose(Driver{Vendor: "ATI Technologies Inc."}, amd); ch != Model(amd) || !strings.HasPrefix(ch.Source, "device model") {
		t.Errorf("AMD gets %+v, not the device model's %+v", ch, Model(amd))
	}
}

// TestUseEdges: the H100 cases the rule was fitted on (interior groups,
// edge groups of fast:64x64x8_8x4_db, 132 slots) and what it decided.
func TestUseEdges(t *testing.T) {
	for _, c := range []struct {
		name             string
		interior, strips int
		want             bool
	}{
		{"4097³ (won 3%)", 512, 129, true}, {"8193³ (won 6%)", 2048, 257, true},
		{"4200³ (lost 7%)", 512, 260, false}, {"3000³ (lost 13%)", 253, 185, false}, {"2049³ (lost 31%)", 128, 65, false},
	} {
		if got := UseEdges(c.interior, c.strips, 132); got != c.want {
			t.Errorf("%s: UseEdges = %v", c.name, got)
		}
	}
	if UseEdges(512, 1, 0) || UseEdges(0, 1, 132) || UseEdges(512, 0, 132) {
		t.Error("UseEdges without slots, interior or strips")
	}
}

func TestSgemmThreshold(t *testing.T) {
	if got := SgemmThreshold(Driver{Vendor: "NVIDIA Corporation"}); got != 1<<24 {
		t.Errorf("NVIDIA threshold %d, want 256³", got)
	}
	if got := SgemmThreshold(Driver{Vendor: "Mesa", Renderer: "llvmpipe"}); got != 1<<27 {
		t.Errorf("llvmpipe threshold %d, want 512³", got)
	}
	if got := SgemmThreshold(Driver{Vendor: "AMD"}); got != math.MaxInt {
		t.Errorf("unmeasured vendor's threshold %d, want never", got)
	}
}

func TestDgemmThreshold(t *testing.T) {
	if got := DgemmThreshold(Driver{Vendor: "Mesa", Renderer: "llvmpipe (LLVM 15.0.6, 256 bits)"}); got != math.MaxInt {
		t.Errorf("llvmpipe float64 threshold %d, want never", got)
	}
	if got := DgemmThreshold(Driver{Vendor: "NVIDIA Corporation"}); got != 1<<24 {
		t.Errorf("NVIDIA float64 threshold %d, want float32's 256³", got)
	}
	if got := DgemmThreshold(Driver{Vendor: "AMD"}); got != math.MaxInt {
		t.Errorf("unmeasured vendor's float64 threshold %d, want never", got)
	}
}

// FuzzLoad: no cache file content panics Load; what it accepts saves and
// loads back the same.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"entries":[{"vendor":"NVIDIA Corporation","renderer":"H100","version":"4.3.0","kernel":"fast:128x128x8_8x8","gflops":1,"n":2048,"when":"2026-11-22T00:00:00Z"}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "tuned.json")
		os.WriteFile(path, b, 0o644)
		c, err := Load(path)
		if err != nil {
			return
		}
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		if back, err := Load(path); err != nil || len(back.Entries) != len(c.Entries) {
			t.Fatalf("round trip: %v, %d entries, want %d", err, len(back.Entries), len(c.Entries))
		}
	})
}

// TestUseSmallGrid pins the choice between the default's tiles (128×256 on
// NVIDIA) split along K and the small grid's on the shapes it came from.
func TestUseSmallGrid(t *testing.T) {
	tiles := func(m, n int) int { return ((m + 127) / 128) * ((n + 255) / 256) }
	for _, c := range []struct {
		name    string
		m, k, n int
		want    bool
	}{
		{"1024³: 32 groups in 8 slices", 1024, 1024, 1024, false},
		{"1000×4096×1000: 32 groups in 8 slices", 1000, 4096, 1000, false},
		{"M 8192, K 8192, N 256: 64 groups in 4 slices", 8192, 8192, 256, false},
		{"2048³: 128 groups", 2048, 2048, 2048, false},
		{"512³: 8 groups, 4 slices of 128", 512, 512, 512, true},
		{"256³", 256, 256, 256, true},
		{"64×4096×64: one group", 64, 4096, 64, true},
		{"4096×64×4096: K = 64", 4096, 64, 4096, true},
	} {
		if got := UseSmallGrid(tiles(c.m, c.n), c.k, 128); got != c.want {
			t.Errorf("%s: UseSmallGrid = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAutoSplitK pins the split rule on the sweep it came from.
func TestAutoSplitK(t *testing.T) {
	for _, c := range []struct{ groups, k, want int }{
		{1, 4096, 32},   // 64×4096×64: slices of 128
		{16, 256, 2},    // 256³ in 64×64 tiles
		{64, 512, 4},    // 512³
		{127, 4096, 3},  // just under a wave
		{128, 4096, 1},  // a wave: no split
		{256, 4096, 1},  // 1000×4096×1000
		{1, 200, 1},     // K too short for two slices of 128
		{4, 100000, 64}, // enough slices for 256 groups
	} {
		if got := AutoSplitK(c.groups, c.k, 128, 0); got != c.want {
			t.Errorf("AutoSplitK(%d, %d, 128, 0) = %d, want %d", c.groups, c.k, got, c.want)
		}
	}
	// llvmpipe on 2 threads: 8 groups fill it; one group gets 4 slices.
	if AutoSplitK(8, 512, 2, 0) != 1 || AutoSplitK(1, 4096, 2, 0) != 4 {
		t.Errorf("wave 2: %d, %d", AutoSplitK(8, 512, 2, 0), AutoSplitK(1, 4096, 2, 0))
	}
	// Past a wave, with the H100's 132 multiprocessors: the splits that
	// measured fastest or within 1% of it (128×256 tiles).
	for _, c := range []struct{ n, want int }{{4097, 3}, {3000, 4}, {2500, 3}, {4096, 1}, {6000, 1}, {8192, 1}, {2048, 1}} {
		groups := ((c.n + 127) / 128) * ((c.n + 255) / 256)
		if got := AutoSplitK(groups, c.n, 128, 132); got != c.want {
			t.Errorf("%d³ (%d groups) on 132 slots: %d slices, want %d", c.n, groups, got, c.want)
		}
	}
	// Slices stay at least 256 long, at most 8; no slots, no split.
	if got := AutoSplitK(561, 700, 128, 132); got != 2 {
		t.Errorf("K = 700: %d slices, want 2", got)
	}
	if AutoSplitK(561, 4097, 128, 0) != 1 || AutoSplitK(133, 100000, 128, 132) > 8 {
		t.Error("no slots or a long K")
	}
	// Under a wave of slots: groups that fill a multiprocessor are split to
	// about one wave (the small grid's two waves of groups doubled their
	// slices): 64 groups of 128×128 measured best in 2 slices on the H100
	// (1024³, 1000×4096×1000); one group takes 32 slices of 128.
	for _, c := range []struct{ groups, k, want int }{{64, 1024, 2}, {64, 4096, 2}, {1, 4096, 32}, {32, 4096, 4}, {128, 8192, 1}, {64, 200, 1}} {
		if got := AutoSplitK(c.groups, c.k, 128, 132); got != c.want {
			t.Errorf("AutoSplitK(%d, %d, 128, 132) = %d, want %d", c.groups, c.k, got, c.want)
		}
	}
	if Wave(Driver{Renderer: "llvmpipe (LLVM 15.0.6, 256 bits)"}) != runtime.NumCPU() || Wave(Driver{Renderer: "NVIDIA H100"}) != 128 {
		t.Error("Wave")
	}
}

// TestClasses: the classes' shapes are of their class at every tune size,
// the benchmark's shapes fall where they should, and the cache keeps one
// entry per driver and class, reading a pre-class entry as Square.
func TestClasses(t *testing.T) {
	for _, n := range []int{1, 3, 16, 40, 256, 2048, 4096} {
		for _, c := range Classes {
			shapes := c.Shapes(n)
			if len(shapes) != 3 {
				t.Errorf("%s.Shapes(%d): %d shapes", c, n, len(shapes))
			}
			for _, s := range shapes {
				if got := Classify(s[0], s[1], s[2]); got != c {
					t.Errorf("%s.Shapes(%d) has %d×%d×%d, classified %s", c, n, s[0], s[1], s[2], got)
				}
			}
		}
	}
	if got := LongK.Shapes(2048); got[0] != [3]int{64, 4096, 64} || got[2] != [3]int{1024, 4096, 1024} {
		t.Errorf("LongK.Shapes(2048) = %v", got)
	}
	for _, c := range []struct {
		m, k, n int
		want    Class
	}{
		{4096, 4096, 4096, Square}, {4097, 4097, 4097, Square}, {8192, 8192, 256, Square}, {512, 512, 512, Square},
		{64, 4096, 64, LongK}, {1000, 4096, 1000, LongK}, {4096, 64, 4096, ThinK}, {100, 600, 100, LongK},
		{3000, 511, 3000, ThinK}, {3000, 512, 3000, Square}, {1, 1, 1, Square},
	} {
		if got := Classify(c.m, c.k, c.n); got != c.want {
			t.Errorf("Classify(%d, %d, %d) = %s, want %s", c.m, c.k, c.n, got, c.want)
		}
	}
	if _, err := ParseClass("wide"); err == nil {
		t.Error("ParseClass(wide): no error")
	}
	d := Driver{Vendor: "V", Renderer: "R", Version: "1"}
	c := Cache{Entries: []Entry{{Driver: d, Kernel: "fast:64x64x8_4x4"}}} // pre-class
	c.Put(Entry{Driver: d, Class: LongK, Kernel: "fast:128x128x8_8x8"})
	c.Put(Entry{Driver: d, Class: Square, Kernel: "fast:128x256x8_8x8_db"})
	if len(c.Entries) != 2 {
		t.Fatalf("%d entries, want square (replacing the pre-class one) and long-k", len(c.Entries))
	}
	if e, ok := c.Lookup(d); !ok || e.Kernel != "fast:128x256x8_8x8_db" {
		t.Errorf("square: %+v %v", e, ok)
	}
	if e, ok := c.LookupClass(d, LongK); !ok || e.Kernel != "fast:128x128x8_8x8" {
		t.Errorf("long-k: %+v %v", e, ok)
	}
	if _, ok := c.LookupClass(d, ThinK); ok {
		t.Error("thin-k was never tuned")
	}
	// float64 entries live beside float32's, each found, replaced and
	// deleted only as its own type.
	if _, ok := c.LookupClass64(d, Square); ok {
		t.Error("a float32 entry found as float64's")
	}
	c.Put(Entry{Driver: d, Class: Square, Kernel: "dfast:64x128x8_8x8_db_tex", Float64: true})
	c.Put(Entry{Driver: d, Class: Square, Kernel: "dfast:128x128x8_8x8_db", Float64: true})
	if e, ok := c.LookupClass64(d, Square); !ok || e.Kernel != "dfast:128x128x8_8x8_db" || len(c.Entries) != 3 {
		t.Errorf("float64 square: %+v %v, %d entries", e, ok, len(c.Entries))
	}
	if e, ok := c.Lookup(d); !ok || e.Kernel != "fast:128x256x8_8x8_db" {
		t.Errorf("square after float64's Put: %+v %v", e, ok)
	}
	c.Delete(d, Square)
	if _, ok := c.LookupClass64(d, Square); !ok {
		t.Error("Delete removed the float64 entry")
	}
	c.Delete64(d, Square)
	if _, ok := c.LookupClass64(d, Square); ok || len(c.Entries) != 1 {
		t.Errorf("Delete64 left %+v", c.Entries)
	}
}

// TestNaturalFor: NVIDIA's stand-in for its transposed-A default is a
// configuration that reads A as it is; llvmpipe has none.
func TestNaturalFor(t *testing.T) {
	h100 := Facts{SharedMemory: 49152, Invocations: 1024}
	nv := Driver{Vendor: "NVIDIA Corporation", Renderer: "NVIDIA H100 80GB HBM3/PCIe/SSE2"}
	if got := Choose(nv, h100).Natural; got != NVIDIANatural || strings.Contains(got, "_at") || !strings.Contains(NVIDIADefault, "_at") {
		t.Errorf("NVIDIA's natural = %q; default %q", got, NVIDIADefault)
	}
	if got := Choose(nv, h100).NaturalWide; got != NVIDIANaturalWide || strings.Contains(got, "_at") || got == NVIDIANatural {
		t.Errorf("NVIDIA's wide natural = %q", got)
	}
	if got := Choose(Driver{Vendor: "Mesa", Renderer: "llvmpipe (LLVM 15.0.6, 256 bits)"}, h100); got.Natural != "" || got.NaturalWide != "" {
		t.Errorf("llvmpipe's natural = %q, %q, want none", got.Natural, got.NaturalWide)
	}
	// NVIDIA's two natural tiles on the H100's 132 multiprocessors (the
	// shapes measured in docs/PERFORMANCE.md "B held for four steps of
	// k"), and without a slot count.
	nat, wide := Tile{M: 128, N: 128, K: 16}, Tile{M: 128, N: 256, K: 16}
	for _, c := range []struct {
		m, k, n, slots int
		want           bool
	}{
		{8192, 8192, 256, 132, true},   // 64 wide groups in 2 slices against 128 natural ones
		{8192, 8192, 1024, 132, true},  // 2 waves against 4
		{4096, 2048, 1024, 132, true},  // 1 wave against 2
		{1024, 8192, 1024, 132, true},  // 2³³: 4 slices against 2
		{1536, 4096, 1536, 132, false}, // 72 wide groups in 7 slices against stream-K's 144
		{1000, 4096, 1000, 132, false}, // under WideNaturalMinMACs
		{1024, 1024, 1024, 132, false}, // under WideNaturalMinMACs
		{1<<11 - 1, 1 << 11, 1 << 11, 0, false},
		{1 << 11, 1 << 11, 1 << 11, 0, true}, // no slot count: size alone
		{1 << 20, 1 << 20, 1 << 20, 0, true}, // no overflow
	} {
		if got := UseWideNatural(c.m, c.k, c.n, nat, wide, 128, c.slots); got != c.want {
			t.Errorf("UseWideNatural(%d×%d×%d, %d slots) = %v", c.m, c.k, c.n, c.slots, got)
		}
	}
	if UseTransposedA(TransposedAMinN-1) || !UseTransposedA(TransposedAMinN) {
		t.Errorf("UseTransposedA does not switch at TransposedAMinN = %d", TransposedAMinN)
	}
}

// TestFillsSM: NVIDIA's four built-in configurations as the probe counted
// them on the H100 (the default and the natural one group a
// multiprocessor, the small grid several; the wide natural, not probed,
// by its accumulators).
func TestFillsSM(t *testing.T) {
	for _, c := range []struct {
		spec         string
		accumulators int
		want         bool
	}{
		{NVIDIADefault, 256 * 128, true},
		{NVIDIANatural, 128 * 128, true},
		{NVIDIANaturalWide, 128 * 256, true},
		{NVIDIASmallGrid, 64 * 64, false},
		{"fast:128x128x8_8x8_db", 128 * 128, false},
	} {
		if got := FillsSM(c.spec, c.accumulators); got != c.want {
			t.Errorf("FillsSM(%s) = %v, want %v", c.spec, got, c.want)
		}
	}
}

// TestUseStreamK: stream-K in place of a split that fills the last wave,
// where its model beats the split's; not where the product runs unsplit,
// under a wave, with short K or no slot count.
func TestUseStreamK(t *testing.T) {
	for _, c := range []struct {
		tiles, steps, slots, split int
		want                       bool
	}{
		{288, 192, 132, 4, true},   // 3072³ in 256×128 tiles: 2.23 against 2.36
		{800, 320, 132, 2, true},   // 5120³: 6.11 against 6.66
		{200, 160, 132, 3, true},   // 2560³: 1.57 against 1.73
		{512, 256, 132, 1, false},  // 4096³: unsplit
		{2048, 512, 132, 1, false}, // 8192³: unsplit
		{128, 256, 132, 2, false},  // under a wave
		{288, 64, 132, 4, false},   // short K
		{288, 192, 0, 4, false},    // slots unknown
		{7, 128, 4, 4, true},       // 1.8 against 1.84 in 4 slices
		{6, 128, 4, 2, false},      // 1.55 against 1.54 in 2 slices
	} {
		if got := UseStreamK(c.tiles, c.steps, c.slots, c.split); got != c.want {
			t.Errorf("UseStreamK(%d, %d, %d, %d) = %v, want %v", c.tiles, c.steps, c.slots, c.split, got, c.want)
		}
	}
	for _, c := range []struct{ groups, k, slots, want int }{{288, 3072, 132, 4}, {800, 5120, 132, 2}, {200, 2560, 132, 3}, {7, 1024, 4, 4}, {6, 1024, 4, 2}} {
		if got := AutoSplitK(c.groups, c.k, 128, c.slots); got != c.want {
			t.Errorf("AutoSplitK(%d, %d, 128, %d) = %d, want %d", c.groups, c.k, c.slots, got, c.want)
		}
	}
}
