// Package conformance is the one test harness that every matrix product
// implementation in glmul must pass: the CPU loops and each GPU kernel on
// each backend. It is pure Go.
package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/validate"
)

// Shape is an m×k by k×n product.
type Shape struct{ M, K, N int }

func (s Shape) String() string { return fmt.Sprintf("%dx%dx%d", s.M, s.K, s.N) }

// Shapes straddle the 32-wide tiles of the paper's kernel and the 64×64
// dispatch cap when run with small caps: 1, 31/32/33, 65, non-square,
// skinny, and K = 1.
var Shapes = []Shape{
	{1, 1, 1},
	{31, 31, 31}, {32, 32, 32}, {33, 33, 33},
	{65, 65, 65},
	{100, 77, 130},
	{1, 300, 1},  // one dot product
	{150, 1, 97}, // K = 1: an outer product
	{3, 200, 70}, // skinny A
	{129, 33, 1}, // one column
	{64, 64, 96},
}

// Mul computes C = A·B, writing every element of C.
type Mul func(c, a, b blas32.General) error

// Run checks mul on every shape in shapes (Shapes if nil), once with compact
// matrices and once with padded row strides, each in a subtest.
func Run(t *testing.T, shapes []Shape, mul Mul) {
	t.Helper()
	if shapes == nil {
		shapes = Shapes
	}
	for _, s := range shapes {
		for _, pad := range []int{0, 3} {
			t.Run(fmt.Sprintf("%v/pad=%d", s, pad), func(t *testing.T) {
				if err := Check(s, pad, mul); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// Check runs mul once on shape s with seeded random inputs, row strides pad
// elements longer than the rows, and C poisoned with NaN. It returns an
// error if mul fails, modifies A or B, writes C's padding, or leaves any
// element of C outside the float32 error bound of validate.CheckFull.
func Check(s Shape, pad int, mul Mul) error {
	rng := rand.New(rand.NewPCG(uint64(s.M*1000003+s.K*1009+s.N), uint64(pad)))
	a := padded(cpu.Random(s.M, s.K, rng), pad, rng)
	b := padded(cpu.Random(s.K, s.N, rng), pad, rng)
	c := padded(cpu.New(s.M, s.N), pad, rng)
	for r := 0; r < c.Rows; r++ {
		for j := 0; j < c.Cols; j++ {
			c.Data[r*c.Stride+j] = float32(math.NaN())
		}
	}
	a0, b0, c0 := clone(a), clone(b), clone(c)
	if err := mul(c, a, b); err != nil {
		return err
	}
	if !same(a, a0) || !same(b, b0) {
		return fmt.Errorf("%v: inputs modified", s)
	}
	for r := 0; r < c.Rows; r++ {
		for j := c.Cols; j < c.Stride; j++ {
			if math.Float32bits(c.Data[r*c.Stride+j]) != math.Float32bits(c0.Data[r*c.Stride+j]) {
				return fmt.Errorf("%v: padding of C row %d written", s, r)
			}
		}
	}
	if err := validate.CheckFull(compact(a), compact(b), compact(c)).Err(); err != nil {
		return fmt.Errorf("%v: %w", s, err)
	}
	return nil
}

// padded copies m into a matrix whose rows are pad elements longer, the
// padding filled with random values that must never be read or written.
func padded(m blas32.General, pad int, rng *rand.Rand) blas32.General {
	if pad == 0 {
		return m
	}
	out := blas32.General{Rows: m.Rows, Cols: m.Cols, Stride: m.Cols + pad, Data: make([]float32, m.Rows*(m.Cols+pad))}
	for i := range out.Data {
		out.Data[i] = float32(1e6 * (rng.Float64() + 1))
	}
	for i := 0; i < m.Rows; i++ {
		copy(out.Data[i*out.Stride:], m.Data[i*m.Stride:i*m.Stride+m.Cols])
	}
	return out
}

func compact(m blas32.General) blas32.General {
	out := cpu.New(m.Rows, m.Cols)
	for i := 0; i < m.Rows; i++ {
		copy(out.Data[i*m.Cols:], m.Data[i*m.Stride:i*m.Stride+m.Cols])
	}
	return out
}

func clone(m blas32.General) blas32.General {
	m.Data = append([]float32(nil), m.Data...)
	return m
}

func same(a, b blas32.General) bool {
	for i := range a.Data {
		if math.Float32bits(a.Data[i]) != math.Float32bits(b.Data[i]) {
			return false
		}
	}
	return true
}

// MustPanic fails t unless f panics with a message holding want: a
// programmer's error (a bad shape, a misused Device) panics, with the
// words the documentation gives.
func MustPanic(t testing.TB, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("no panic, want one with %q", want)
			return
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Errorf("panic %q, want one with %q", msg, want)
		}
	}()
	f()
}
