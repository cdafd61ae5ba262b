package validate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas/blas32"
)

// Mode selects how a product is checked.
type Mode string

const (
	Auto      Mode = "auto"      // Full up to AutoFullLimit multiply-adds, Freivalds above
	Full      Mode = "full"      // every element against a float64 product
	Freivalds Mode = "freivalds" // random projections in float64
	None      Mode = "none"      // no check
)

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, Full, Freivalds, None:
		return m, nil
	}
	return "", fmt.Errorf("unknown validation mode %q: use auto, full, freivalds or none", s)
}

// AutoFullLimit is the largest product (M·N·K multiply-adds) that Auto
// checks in full: 1024³ takes about a second on two cores.
const AutoFullLimit = 1 << 30

// FreivaldsVectors is how many random vectors Auto and Freivalds use.
const FreivaldsVectors = 4

// u32 and u64 are the unit roundoffs of float32 and float64.
var (
	u32 = math.Ldexp(1, -24)
	u64 = math.Ldexp(1, -53)
)

// gamma returns γ_k = ku/(1−ku), or +Inf where ku ≥ 1 and no bound exists.
func gamma(k int, u float64) float64 {
	ku := float64(k) * u
	if ku >= 1 {
		return math.Inf(1)
	}
	return ku / (1 - ku)
}

// Result describes one check.
type Result struct {
	Mode Mode `json:"mode"`
	OK   bool `json:"ok"`
	// Vectors is the number of random vectors (Freivalds only).
	Vectors int `json:"vectors,omitempty"`
	// WorstRatio is the largest error divided by its bound: OK means ≤ 1.
	// NaN or Inf in the result makes it +Inf.
	WorstRatio float64 `json:"worst_ratio"`
	// Row and Col locate the worst element (Full) or the worst row of C·x
	// (Freivalds, Col = −1).
	Row int `json:"row"`
	Col int `json:"col"`
	// Got, Want and Bound are the worst element's value, reference value and
	// tolerance (for Freivalds: of (C·x)ᵢ).
	Got   float64 `json:"got"`
	Want  float64 `json:"want"`
	Bound float64 `json:"bound"`
	// RelFrobenius is ‖Ĉ − C‖_F / ‖C‖_F against the float64 product (Full only).
	RelFrobenius float64 `json:"rel_frobenius,omitempty"`
	// f64: the check of a float64 product (Check64), against a
	// double-double reference: Err names it, with a float64's digits.
	f64 bool
}

// MarshalJSON writes r with its non-finite numbers (a NaN or Inf in C
// makes WorstRatio +Inf), which JSON has no numbers for, as null, and
// "nonfinite": true beside them; finite ones stay numbers.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // without this method
	nonfinite := false
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			nonfinite = true
			return nil
		}
		return &x
	}
	v := struct {
		plain
		WorstRatio   *float64 `json:"worst_ratio"`
		Got          *float64 `json:"got"`
		Want         *float64 `json:"want"`
		Bound        *float64 `json:"bound"`
		RelFrobenius *float64 `json:"rel_frobenius,omitempty"`
		NonFinite    bool     `json:"nonfinite,omitempty"`
	}{plain: plain(r), WorstRatio: num(r.WorstRatio), Got: num(r.Got), Want: num(r.Want), Bound: num(r.Bound)}
	if r.RelFrobenius != 0 {
		v.RelFrobenius = num(r.RelFrobenius)
	}
	v.NonFinite = nonfinite
	return json.Marshal(v)
}

// Err returns nil if the check passed, else an error naming the worst element.
func (r Result) Err() error {
	if r.OK || r.Mode == None {
		return nil
	}
	where := fmt.Sprintf("C[%d][%d]", r.Row, r.Col)
	if r.Col < 0 {
		where = fmt.Sprintf("row %d of C·x", r.Row)
	}
	ref, digits, elem := "float64 reference", 9, "float32"
	if r.f64 {
		ref, digits, elem = "double-double reference", 17, "float64"
	}
	gotOK, wantOK := !math.IsNaN(r.Got) && !math.IsInf(r.Got, 0), !math.IsNaN(r.Want) && !math.IsInf(r.Want, 0)
	switch {
	case gotOK && !wantOK && r.Col >= 0:
		return fmt.Errorf("validation (%s) failed: %s = %.*g is finite, but a NaN or an Inf in row %d of A or column %d of B must make it NaN or ±Inf",
			r.Mode, where, digits, r.Got, r.Row, r.Col)
	case !gotOK && wantOK:
		return fmt.Errorf("validation (%s) failed: %s = %v where the %s is %.*g (no NaN or Inf in A or B reaches it, and no partial sum can overflow %s)",
			r.Mode, where, r.Got, ref, digits, r.Want, elem)
	}
	return fmt.Errorf("validation (%s) failed: %s = %.*g, %s %.*g, error %.3g exceeds the tolerance %.3g (%.3g×)",
		r.Mode, where, digits, r.Got, ref, digits, r.Want, math.Abs(r.Got-r.Want), r.Bound, r.WorstRatio)
}

// String summarises the result on one line.
func (r Result) String() string {
	if r.Mode == None {
		return "none (not validated)"
	}
	status := "ok"
	if !r.OK {
		status = "FAILED"
	}
	s := fmt.Sprintf("%s: %s, worst error %.3g of its tolerance", r.Mode, status, r.WorstRatio)
	if r.Mode == Freivalds {
		s = fmt.Sprintf("%s (%d vectors): %s, worst error %.3g of its tolerance", r.Mode, r.Vectors, status, r.WorstRatio)
	}
	if r.Mode == Full {
		s += fmt.Sprintf(", relative Frobenius error %.2g", r.RelFrobenius)
	}
	return s
}

// Check validates C = A·B with the given mode; rng draws Freivalds vectors.
func Check(mode Mode, a, b, c blas32.General, rng *rand.Rand) Result {
	switch mode {
	case None:
		return Result{Mode: None, OK: true}
	case Full:
		return CheckFull(a, b, c)
	case Freivalds:
		return CheckFreivalds(a, b, c, FreivaldsVectors, rng)
	}
	if Choose(a.Rows, a.Cols, b.Cols) == Full {
		return CheckFull(a, b, c)
	}
	return CheckFreivalds(a, b, c, FreivaldsVectors, rng)
}

// Choose returns the mode Auto uses for an m×k by k×n product.
func Choose(m, k, n int) Mode {
	if float64(m)*float64(k)*float64(n) <= AutoFullLimit {
		return Full
	}
	return Freivalds
}

// CheckFull compares every element of C with a float64 product (see
// FullRows, which it runs over the whole product).
func CheckFull(a, b, c blas32.General) Result {
	checkShapes(a, b, c)
	f := NewFullRows(b)
	f.Check(a, c, 0)
	return f.Result()
}

// nonFinite reports which rows of a and which columns of b hold a NaN or
// an Inf.
func nonFinite(a, b blas32.General) (rows, cols []bool) {
	return nonFiniteRows(a.Data, a.Rows, a.Cols, a.Stride), nonFiniteCols(b.Data, b.Rows, b.Cols, b.Stride)
}

// float is the element types checked: float32 and float64 products.
type float interface{ ~float32 | ~float64 }

// nonFiniteRows reports which rows of the rows×cols matrix in data (rows
// stride apart) hold a NaN or an Inf, the rows shared over the CPUs: a
// pass over a large A is memory-bound, and one core reads a few GB/s.
func nonFiniteRows[E float](data []E, rows, cols, stride int) []bool {
	nf := make([]bool, rows)
	inParallel(rows, cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			for _, v := range data[i*stride : i*stride+cols] {
				nf[i] = nf[i] || v-v != 0
			}
		}
	})
	return nf
}

// nonFiniteCols reports which columns of the rows×cols matrix in data
// (rows stride apart) hold a NaN or an Inf: each of the CPUs scans a band
// of rows into its own flags, and the bands' flags are or-ed.
func nonFiniteCols[E float](data []E, rows, cols, stride int) []bool {
	return nonFiniteColsOn(runtime.GOMAXPROCS(0), data, rows, cols, stride)
}

// nonFiniteColsOn is nonFiniteCols on up to procs goroutines.
func nonFiniteColsOn[E float](procs int, data []E, rows, cols, stride int) []bool {
	var mu sync.Mutex
	nf := make([]bool, cols)
	inParallelOn(procs, rows, cols, func(lo, hi int) {
		part := make([]bool, cols)
		for k := lo; k < hi; k++ {
			for j, v := range data[k*stride : k*stride+cols] {
				part[j] = part[j] || v-v != 0
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for j, b := range part {
			nf[j] = nf[j] || b
		}
	})
	return nf
}

// ratio is d/bound, with 0/0 = 0 (an exact zero) and NaN mapped to +Inf so
// that NaN results fail.
func ratio(d, bound float64) float64 {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return math.Inf(1)
	}
	if d == 0 {
		return 0
	}
	return d / bound
}

// CheckFreivalds compares C·x with A·(B·x) in float64 for vectors random
// vectors drawn from rng, uniform on [-1, 1) (see Rows, which it runs
// over the whole product).
func CheckFreivalds(a, b, c blas32.General, vectors int, rng *rand.Rand) Result {
	checkShapes(a, b, c)
	f := NewRows(b, vectors, rng)
	f.Check(a, c, 0)
	return f.Result()
}

func checkShapes(a, b, c blas32.General) {
	if a.Cols != b.Rows || c.Rows != a.Rows || c.Cols != b.Cols {
		panic("validate: shapes of A, B and C do not agree")
	}
}
