package glcompute

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/internal/conformance"
)

// TestMulKernel runs resident products with each family's kernel on
// zero-padded matrices of the fast layout (as glmul mul streams its
// panels), and refuses layouts a kernel cannot read.
func TestMulKernel(t *testing.T) {
	d := openDevice(t, BackendEGL)
	pad := func(x int) int { return (x + 3) / 4 * 4 }
	for _, spec := range []string{"", "tiled32", "fast:64x64x8_4x4", "fast:128x128x8_8x8_db_at", "cpu:8x8_8x8"} {
		if d.tuning().Fits(spec) != nil && spec != "" {
			continue
		}
		t.Run(fmt.Sprintf("kernel=%s", spec), func(t *testing.T) {
			conformance.Run(t, []conformance.Shape{{M: 70, K: 33, N: 17}, {M: 1, K: 1, N: 1}, {M: 129, K: 64, N: 130}}, func(c, a, b blas32.General) error {
				m, k, n := a.Rows, a.Cols, b.Cols
				ga, gb, gc := newMatrix(t, d, m, pad(k)), newMatrix(t, d, pad(k), pad(n)), newMatrix(t, d, m, pad(n))
				ha, hb := cpu.New(m, pad(k)), cpu.New(pad(k), pad(n))
				for i := 0; i < m; i++ {
					copy(ha.Data[i*ha.Stride:], a.Data[i*a.Stride:i*a.Stride+k])
				}
				for i := 0; i < k; i++ {
					copy(hb.Data[i*hb.Stride:], b.Data[i*b.Stride:i*b.Stride+n])
				}
				if err := errors.Join(ga.Upload(ha), gb.Upload(hb)); err != nil {
					return err
				}
				if err := gc.mulKernel(spec, ga, gb); err != nil {
					return err
				}
				hc := cpu.New(m, pad(n))
				if err := gc.Download(hc); err != nil {
					return err
				}
				for i := 0; i < m; i++ {
					copy(c.Data[i*c.Stride:i*c.Stride+n], hc.Data[i*hc.Stride:])
				}
				return nil
			})
		})
	}
	rng := rand.New(rand.NewPCG(1, 3))
	a, b, c := newMatrix(t, d, 8, 6), newMatrix(t, d, 6, 8), newMatrix(t, d, 8, 8)
	a.Upload(cpu.Random(8, 6, rng))
	if err := c.mulKernel("fast:64x64x8_4x4", a, b); !errors.Is(err, ErrUnsupported) {
		t.Errorf("6 columns: %v, want ErrUnsupported", err)
	}
	if err := c.mulKernel("fastest", a, b); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown kernel: %v", err)
	}
}
