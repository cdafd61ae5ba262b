package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// shapes straddle the 32-wide tile of the GPU kernels and gonum's blocking.
var shapes = [][3]int{{1, 1, 1}, {31, 33, 32}, {65, 1, 7}, {3, 100, 2}, {64, 64, 64}, {70, 45, 129}}

func TestNaiveAndSgemmMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		m, k, n := s[0], s[1], s[2]
		a, b := Random(m, k, rng), Random(k, n, rng)
		a0, b0 := clone(a), clone(b)
		ref := Reference(a, b, false)
		mag := Reference(a, b, true)
		u := math.Ldexp(1, -24)
		gamma := float64(k) * u / (1 - float64(k)*u)
		for name, f := range map[string]func(c, a, b blas32.General){"naive": Naive, "sgemm": Sgemm} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", name, m, k, n), func(t *testing.T) {
				c := New(m, n)
				for i := range c.Data {
					c.Data[i] = float32(math.NaN())
				}
				f(c, a, b)
				for i := range c.Data {
					err := math.Abs(float64(c.Data[i]) - ref.Data[i])
					if !(err <= gamma*mag.Data[i]) {
						t.Fatalf("element %d: %v, want %v within %.3g", i, c.Data[i], ref.Data[i], gamma*mag.Data[i])
					}
				}
				if !equal(a, a0) || !equal(b, b0) {
					t.Fatal("inputs modified")
				}
			})
		}
	}
}

func TestRandomIsSignedAndSeeded(t *testing.T) {
	a := Random(50, 50, rand.New(rand.NewPCG(7, 7)))
	b := Random(50, 50, rand.New(rand.NewPCG(7, 7)))
	if !equal(a, b) {
		t.Fatal("same seed, different matrices")
	}
	var neg, pos int
	for _, v := range a.Data {
		if v < -1 || v >= 1 {
			t.Fatalf("value %v outside [-1, 1)", v)
		}
		if v < 0 {
			neg++
		} else if v > 0 {
			pos++
		}
	}
	if neg < 1000 || pos < 1000 {
		t.Fatalf("%d negative, %d positive values of 2500: not uniform on [-1, 1)", neg, pos)
	}
}

func TestShapeMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for mismatched shapes")
		}
	}()
	Naive(New(2, 2), New(2, 3), New(2, 2))
}

func clone(m blas32.General) blas32.General {
	c := m
	c.Data = append([]float32(nil), m.Data...)
	return c
}

func equal(a, b blas32.General) bool {
	if a.Rows != b.Rows || a.Cols != b.Cols {
		return false
	}
	for i := range a.Data {
		if math.Float32bits(a.Data[i]) != math.Float32bits(b.Data[i]) {
			return false
		}
	}
	return true
}

// TestNaive64AndDgemmAgree: the float64 naive loop and gonum's Dgemm
// agree within float64's error bound, γₖ·|A|·|B| with u = 2⁻⁵³ (twice
// it: each has its own error), and neither modifies A or B.
func TestNaive64AndDgemmAgree(t *testing.T) {
	for i, s := range shapes {
		m, k, n := s[0], s[1], s[2]
		a, b := new64(m, k), new64(k, n)
		FillUniform64(a, uint64(i), 0, nil)
		FillUniform64(b, uint64(i), 1, nil)
		a0, b0 := slices.Clone(a.Data), slices.Clone(b.Data)
		naive, dgemm := new64(m, n), new64(m, n)
		NaiveRows64(naive, a, b, 0, m)
		Dgemm(dgemm, a, b)
		u := math.Ldexp(1, -53)
		gamma := float64(k) * u / (1 - float64(k)*u)
		for r := range m {
			for c := range n {
				mag := 0.0
				for p := range k {
					mag += math.Abs(a.Data[r*k+p] * b.Data[p*n+c])
				}
				if d := math.Abs(naive.Data[r*n+c] - dgemm.Data[r*n+c]); !(d <= 2*gamma*mag) {
					t.Fatalf("%v: C[%d,%d]: naive %v, Dgemm %v, beyond %.3g", s, r, c, naive.Data[r*n+c], dgemm.Data[r*n+c], 2*gamma*mag)
				}
			}
		}
		if !slices.Equal(a.Data, a0) || !slices.Equal(b.Data, b0) {
			t.Fatalf("%v: inputs modified", s)
		}
	}
}

// new64 is a compact zeroed rows×cols float64 matrix, for the tests.
func new64(rows, cols int) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float64, rows*cols)}
}
