package glcompute

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/validate"
)

// TestKPanels: a K too long for one tile's panels to fit a binding
// (lowered by MulOptions.MaxBinding) is cut into K panels whose products
// add up in C: one block of C, and several row and column panels with A
// kept and streamed (MaxGPUMemory), through the pipelined pass and
// Measure's stages, and K panels cut within llvmpipe's loop budget (where
// the device has one: 131068 of K for the cpu kernel, under the 262144 a
// 4 MiB binding holds); each C against float64. It was refused ("the
// smallest panels do not fit").
func TestKPanels(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(13, 14))
	const kern = "fast:64x64x8_4x4"
	for _, c := range []struct {
		m, k, n int
		o       MulOptions
		staged  bool
		want    string
	}{
		{3, 20001, 5, MulOptions{Kernel: kern, MaxBinding: 64 << 10}, false, "1×1 panels of 3×5, K in 10 panels of 2048"},
		{130, 3000, 150, MulOptions{Kernel: kern, MaxBinding: 64 << 10}, true, "3×3 panels of 64×64, K in 12 panels of 256"},
		{130, 3000, 150, MulOptions{Kernel: kern, MaxBinding: 64 << 10, MaxGPUMemory: 1 << 20}, false, "A streamed"},
		{3, 20001, 5, MulOptions{Kernel: "cpu:8x8_8x8", MaxBinding: 64 << 10}, false, "K in"},
		{3, 20001, 5, MulOptions{Kernel: "", MaxBinding: 64 << 10}, false, "K in"},
		{2, 300000, 3, MulOptions{Kernel: "", MaxBinding: 4 << 20}, false, "K in"},
	} {
		name := fmt.Sprintf("%d×%d×%d %+v", c.m, c.k, c.n, c.o)
		a, b, cm := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng), cpu.New(c.m, c.n)
		tm, err := mulStaged(d, cm, a, b, c.o, c.staged)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(tm.Panels, c.want) {
			t.Errorf("%s: panels %q, want %q", name, tm.Panels, c.want)
		}
		if res := validate.CheckFull(a, b, cm); res.Err() != nil {
			t.Errorf("%s: %v", name, res.Err())
		}
	}
}

// TestPlanMatchesMul: Plan names the kernel and the panel plan that Mul
// then runs with the same options, in one piece and in panels (row and
// column panels, K panels, A streamed), with the device's kernel choice
// and a named one.
func TestPlanMatchesMul(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, c := range []struct {
		m, k, n int
		o       MulOptions
	}{
		{70, 65, 33, MulOptions{}},
		{130, 300, 150, MulOptions{Kernel: "tiled32"}},
		{3, 20001, 5, MulOptions{MaxBinding: 64 << 10}},
		{130, 3000, 150, MulOptions{Kernel: "fast:64x64x8_4x4", MaxBinding: 64 << 10}},
		{130, 3000, 150, MulOptions{Kernel: "fast:64x64x8_4x4", MaxBinding: 64 << 10, MaxGPUMemory: 1 << 20}},
	} {
		plan, err := d.Plan(c.m, c.k, c.n, &c.o)
		if err != nil {
			t.Fatalf("%d×%d×%d %+v: Plan: %v", c.m, c.k, c.n, c.o, err)
		}
		a, b, cm := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng), cpu.New(c.m, c.n)
		tm, err := d.Mul(cm, a, b, &c.o)
		if err != nil {
			t.Fatalf("%d×%d×%d %+v: Mul: %v", c.m, c.k, c.n, c.o, err)
		}
		if plan.Kernel != tm.Kernel || plan.Panels != tm.Panels {
			t.Errorf("%d×%d×%d %+v: Plan says %q in panels %q; Mul ran %q in %q", c.m, c.k, c.n, c.o, plan.Kernel, plan.Panels, tm.Kernel, tm.Panels)
		}
		if c.o.MaxBinding > 0 && plan.Panels == "" {
			t.Errorf("%d×%d×%d %+v: no panels planned under a lowered binding", c.m, c.k, c.n, c.o)
		}
	}
}
