package validate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
)

var shapes = [][3]int{{1, 1, 1}, {33, 1, 31}, {64, 200, 48}, {5, 1000, 3}, {100, 77, 130}}

func product(m, k, n int, seed uint64) (a, b, c blas32.General) {
	rng := rand.New(rand.NewPCG(seed, 99))
	a, b = cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	c = cpu.New(m, n)
	cpu.Sgemm(c, a, b)
	return a, b, c
}

func TestCorrectProductsPass(t *testing.T) {
	for _, s := range shapes {
		a, b, c := product(s[0], s[1], s[2], 1)
		for _, mode := range []Mode{Full, Freivalds, Auto} {
			r := Check(mode, a, b, c, rand.New(rand.NewPCG(3, 4)))
			if !r.OK || r.Err() != nil {
				t.Errorf("%v %v: %v", s, mode, r.Err())
			}
			// For long dot products the bound must leave headroom over the
			// real error, not be met by luck: float32 error grows far slower
			// than it. (At K = 1 the bound is one rounding and can be reached.)
			if s[1] >= 64 && r.WorstRatio > 0.5 {
				t.Errorf("%v %v: worst error %.3g of the tolerance; the bound is too tight to rely on", s, mode, r.WorstRatio)
			}
		}
	}
}

// TestCorruptionIsCaught corrupts one element (or row) of a correct product
// in the ways a broken kernel does, and expects every mode to report it.
func TestCorruptionIsCaught(t *testing.T) {
	corruptions := map[string]func(c blas32.General){
		"nan":       func(c blas32.General) { c.Data[len(c.Data)/2] = float32(math.NaN()) },
		"inf":       func(c blas32.General) { c.Data[0] = float32(math.Inf(-1)) },
		"zeroed":    func(c blas32.General) { c.Data[c.Stride*(c.Rows-1)] = 0 },
		"dropped-k": nil, // filled below: one term missing from one element
		"row-shift": func(c blas32.General) { copy(c.Data[c.Stride:2*c.Stride], c.Data[:c.Stride]) },
	}
	for _, s := range [][3]int{{40, 64, 50}, {70, 300, 33}} {
		a, b, c0 := product(s[0], s[1], s[2], 2)
		corruptions["dropped-k"] = func(c blas32.General) {
			// C[1][2] without the k = 5 term: the error of a kernel that
			// skips one iteration of a tile loop.
			c.Data[c.Stride+2] -= a.Data[a.Stride+5] * b.Data[5*b.Stride+2]
		}
		for name, corrupt := range corruptions {
			for _, mode := range []Mode{Full, Freivalds} {
				t.Run(fmt.Sprintf("%v/%s/%s", s, name, mode), func(t *testing.T) {
					c := c0
					c.Data = append([]float32(nil), c0.Data...)
					corrupt(c)
					r := Check(mode, a, b, c, rand.New(rand.NewPCG(5, 6)))
					if r.OK {
						t.Fatalf("not caught: %+v", r)
					}
					if err := r.Err(); err == nil || !strings.Contains(err.Error(), "exceeds the tolerance") && !strings.Contains(err.Error(), "where the float64 reference is") {
						t.Fatalf("Err() = %v", err)
					}
				})
			}
		}
	}
}

func TestFullNamesWorstElement(t *testing.T) {
	a, b, c := product(20, 30, 40, 3)
	c.Data[7*c.Stride+11] += 1
	r := CheckFull(a, b, c)
	if r.OK || r.Row != 7 || r.Col != 11 {
		t.Fatalf("worst at (%d,%d) ok=%v, want (7,11) failed", r.Row, r.Col, r.OK)
	}
	if !strings.Contains(r.Err().Error(), "C[7][11]") {
		t.Fatalf("error %q does not name C[7][11]", r.Err())
	}
}

func TestAutoChoosesBySize(t *testing.T) {
	a, b, c := product(8, 8, 8, 4)
	if r := Check(Auto, a, b, c, rand.New(rand.NewPCG(1, 1))); r.Mode != Full {
		t.Fatalf("auto on 8³ chose %s, want full", r.Mode)
	}
	for _, c := range []struct {
		m, k, n int
		want    Mode
	}{{1024, 1024, 1024, Full}, {1024, 1024, 1025, Freivalds}, {4096, 4096, 4096, Freivalds}, {1, 1 << 20, 1024, Full}} {
		if got := Choose(c.m, c.k, c.n); got != c.want {
			t.Errorf("Choose(%d, %d, %d) = %s, want %s", c.m, c.k, c.n, got, c.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"auto", "full", "freivalds", "none"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseMode("most"); err == nil {
		t.Error("ParseMode(most): no error")
	}
}

func TestJSONOfAFailedCheck(t *testing.T) {
	a, b, c := product(4, 4, 4, 8)
	c.Data[5] = float32(math.NaN())
	r := CheckFull(a, b, c)
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back["ok"] != false || back["worst_ratio"] != nil || back["got"] != nil || back["nonfinite"] != true || back["row"] != 1.0 || back["col"] != 1.0 {
		t.Fatalf("JSON %s", out)
	}
}

// TestFullAcceptsPropagatedNaNAndInf: a NaN or Inf input gives NaN or Inf
// where the float64 reference has them, or where IEEE arithmetic makes
// them (0·NaN) though gonum's reference skips the zero term; a NaN far
// from any non-finite input is still wrong.
func TestFullAcceptsPropagatedNaNAndInf(t *testing.T) {
	a := blas32.General{Rows: 2, Cols: 2, Stride: 2, Data: []float32{float32(math.NaN()), 1, float32(math.Inf(1)), 2}}
	b := blas32.General{Rows: 2, Cols: 2, Stride: 2, Data: []float32{1, 0, 0, 1}}
	// A·I: row 0 = [NaN, 1] (NaN·0 = NaN too), row 1 = [+Inf, NaN (Inf·0)].
	c := blas32.General{Rows: 2, Cols: 2, Stride: 2, Data: []float32{float32(math.NaN()), float32(math.NaN()), float32(math.Inf(1)), float32(math.NaN())}}
	if r := CheckFull(a, b, c); !r.OK {
		t.Fatalf("propagated NaN and Inf refused: %v", r)
	}
	a.Data[0] = 1
	if r := CheckFull(a, b, c); r.OK {
		t.Fatal("NaN where the reference is finite accepted")
	}
}

// TestResultJSON: a NaN or Inf in C makes WorstRatio +Inf, which
// encoding/json cannot write (issue 23: JSON reports carried it badly):
// non-finite figures are null with "nonfinite": true, finite ones numbers.
func TestResultJSON(t *testing.T) {
	r := Result{Mode: Full, WorstRatio: math.Inf(1), Row: 2, Col: 3, Got: math.NaN(), Want: 1.5, Bound: 1e-6}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if back["worst_ratio"] != nil || back["got"] != nil || back["want"] != 1.5 || back["nonfinite"] != true || back["row"] != 2.0 || back["mode"] != "full" {
		t.Errorf("JSON %s", b)
	}
	if _, ok := back["rel_frobenius"]; ok {
		t.Errorf("rel_frobenius present though 0: %s", b)
	}
	b, _ = json.Marshal(Result{Mode: Full, OK: true, WorstRatio: 0.25, RelFrobenius: 1e-7})
	back = nil
	json.Unmarshal(b, &back)
	if back["worst_ratio"] != 0.25 || back["rel_frobenius"] != 1e-7 || back["nonfinite"] != nil {
		t.Errorf("JSON %s", b)
	}
}

// TestFloat32Overflow: finite A and B whose product passes float32's
// largest value give ±Inf (or NaN, partial sums of both signs having
// overflowed) in float32, as NumPy's float32 product does: not a failure.
// An Inf where no partial sum can pass that value still is, as is a wrong
// finite element in a row that overflowed elsewhere (Freivalds checks
// such a row in full). Before, every mode failed such a product.
func TestFloat32Overflow(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	rng := rand.New(rand.NewPCG(7, 7))
	const m, k, n = 40, 30, 20
	a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	for j := range n { // rows 0–2 of B zero but where they meet the large elements below
		b.Data[0*b.Stride+j], b.Data[1*b.Stride+j], b.Data[2*b.Stride+j] = 0, 0, 0
	}
	a.Data[3*a.Stride+0], b.Data[0*b.Stride+5] = 1e30, 1e30  // C[3][5] ≈ +1e60
	a.Data[7*a.Stride+1], b.Data[1*b.Stride+2] = -3e38, 3e38 // C[7][2] ≈ -9e76
	a.Data[7*a.Stride+2], b.Data[2*b.Stride+2] = 3e38, 3e38  // and +9e76: float32 makes NaN or Inf
	c := cpu.New(m, n)
	cpu.Sgemm(c, a, b)
	if v := c.Data[3*c.Stride+5]; !math.IsInf(float64(v), 1) {
		t.Fatalf("the test's product did not overflow: C[3][5] = %v", v)
	}
	checks := map[string]func(c blas32.General) Result{
		"full": func(c blas32.General) Result { return CheckFull(a, b, c) },
		"freivalds": func(c blas32.General) Result {
			return CheckFreivalds(a, b, c, FreivaldsVectors, rand.New(rand.NewPCG(1, 2)))
		},
		"panels": func(c blas32.General) Result {
			p := NewPanels(Freivalds, b, rand.New(rand.NewPCG(1, 2)))
			p.Check(blas32.General{Rows: 8, Cols: k, Stride: a.Stride, Data: a.Data}, blas32.General{Rows: 8, Cols: n, Stride: c.Stride, Data: c.Data}, 0)
			p.Check(blas32.General{Rows: m - 8, Cols: k, Stride: a.Stride, Data: a.Data[8*a.Stride:]}, blas32.General{Rows: m - 8, Cols: n, Stride: c.Stride, Data: c.Data[8*c.Stride:]}, 8)
			return p.Result()
		},
	}
	for name, check := range checks {
		for _, v := range []float32{inf, -inf, nan} { // whatever float32's order of summation made of C[7][2]
			c2 := cpu.New(m, n)
			copy(c2.Data, c.Data)
			c2.Data[7*c2.Stride+2] = v
			if r := check(c2); !r.OK {
				t.Errorf("%s: an overflowed product refused (C[7][2] = %v): %v", name, v, r.Err())
			}
		}
		bad := cpu.New(m, n)
		copy(bad.Data, c.Data)
		bad.Data[10*bad.Stride+4] = inf // no partial sum there comes near float32's largest value
		if r := check(bad); r.OK {
			t.Errorf("%s: an Inf where nothing overflows accepted", name)
		}
		copy(bad.Data, c.Data)
		bad.Data[3*bad.Stride+6] += 1 // a wrong element beside the overflow in row 3
		if r := check(bad); r.OK {
			t.Errorf("%s: a wrong element in a row that overflowed elsewhere accepted", name)
		}
	}
}

// TestOverflowSign: which non-finite elements float32 can make of finite
// terms depends on their signs, not only on Σ|aᵢₖ||bₖⱼ| (a review found
// the first version accepting any of them wherever that sum passed
// float32's largest value): terms that cancel (2e38 − 2e38) give 0 in any
// order, so Inf or NaN there is an error; positive terms alone may give
// +Inf, never −Inf or NaN; terms that add up to just float32's largest
// value may round past it, so +Inf there is float32's own.
func TestOverflowSign(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	gen := func(r, c int, d ...float32) blas32.General {
		return blas32.General{Rows: r, Cols: c, Stride: c, Data: d}
	}
	modes := map[string]func(a, b, c blas32.General) Result{
		"full":      CheckFull,
		"freivalds": func(a, b, c blas32.General) Result { return CheckFreivalds(a, b, c, 4, rand.New(rand.NewPCG(1, 2))) },
		"panels": func(a, b, c blas32.General) Result {
			p := NewPanels(Freivalds, b, rand.New(rand.NewPCG(1, 2)))
			p.Check(a, c, 0)
			return p.Result()
		},
	}
	edge := []float32{float32(math.Ldexp(1, 126) + 3*math.Ldexp(1, 103)), float32(math.Ldexp(1, 126)), float32(math.Ldexp(1, 127) - 5*math.Ldexp(1, 103))}
	for _, c := range []struct {
		name string
		a, b blas32.General
		ok   map[float32]bool // C's one element → whether it must pass
	}{
		{"cancel", gen(1, 2, 2e38, 2e38), gen(2, 1, 1, -1), map[float32]bool{0: true, inf: false, -inf: false, nan: false}},
		{"positive", gen(1, 2, 1e30, 1), gen(2, 1, 1e30, 1), map[float32]bool{inf: true, -inf: false, nan: false}},
		{"negative", gen(1, 2, -1e30, 1), gen(2, 1, 1e30, 1), map[float32]bool{-inf: true, inf: false, nan: false}},
		{"both", gen(1, 2, 3e38, 3e38), gen(2, 1, 3e38, -3e38), map[float32]bool{nan: true, inf: true, -inf: true}},
		{"rounding", gen(1, 3, 1, 1, 1), gen(3, 1, edge...), map[float32]bool{inf: true, -inf: false}},
	} {
		for v, want := range c.ok {
			for name, check := range modes {
				if r := check(c.a, c.b, gen(1, 1, v)); r.OK != want {
					t.Errorf("%s, C = %v, %s: ok %v, want %v (%v)", c.name, v, name, r.OK, want, r)
				}
			}
		}
	}
}

// TestNonFiniteBands puts a NaN and an Inf in the first and last rows of
// matrices large enough to be scanned in several bands over the CPUs:
// each band's flags must reach the result, and no other row or column may
// be flagged.
func TestNonFiniteBands(t *testing.T) {
	const rows, cols = 3001, 1024 // 3·2²⁰ elements: several bands where GOMAXPROCS allows
	data := make([]float32, (rows-1)*(cols+1)+cols)
	for i := range data {
		data[i] = float32(i%7) - 3
	}
	stride := cols + 1 // a gap after each row, never read
	nfRows := [][2]int{{0, 17}, {rows - 1, cols - 1}, {1500, 0}}
	for _, e := range nfRows {
		data[e[0]*stride+e[1]] = float32(math.NaN())
	}
	data[700*stride+33] = float32(math.Inf(-1))
	for i := 0; i < rows-1; i++ {
		data[i*stride+cols] = float32(math.NaN()) // a gap
	}
	wantRow := map[int]bool{0: true, rows - 1: true, 1500: true, 700: true}
	wantCol := map[int]bool{17: true, cols - 1: true, 0: true, 33: true}
	gotRows := nonFiniteRows(data, rows, cols, stride)
	gotCols := nonFiniteCols(data, rows, cols, stride)
	for i, got := range gotRows {
		if got != wantRow[i] {
			t.Errorf("row %d flagged %v, want %v", i, got, wantRow[i])
		}
	}
	for j, got := range gotCols {
		if got != wantCol[j] {
			t.Errorf("column %d flagged %v, want %v", j, got, wantCol[j])
		}
	}
}
