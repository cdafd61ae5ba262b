package glcompute

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/validate"
)

// TestDispatchPacing: with a dispatch budget (Windows' default guards its
// GPU watchdog, TDR), no dispatch runs longer than the budget, even on the
// slowest device glmul meets: llvmpipe running the paper's kernel, whose
// one 12×12-group dispatch of this product takes several budgets there
// (or softpipe, where a single group outlasts the budget and so runs
// alone). The product stays right.
func TestDispatchPacing(t *testing.T) {
	const budget = 40 * time.Millisecond
	d, err := Open(&Options{Backend: onPlatform(BackendEGL), MaxDispatchTime: budget})
	if err != nil {
		noGL(t, err.Error())
	}
	defer d.Release()
	rng := rand.New(rand.NewPCG(26, 1))
	const n = 384
	a, b, c := cpu.Random(n, n, rng), cpu.Random(n, n, rng), cpu.New(n, n)
	start := time.Now()
	if _, err := d.Mul(c, a, b, &MulOptions{Kernel: "tiled32"}); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(start)
	if r := validate.CheckFull(a, b, c); !r.OK {
		t.Fatalf("paced product wrong: %v", r.Err())
	}
	var pc *pacer
	for _, p := range d.programs {
		if p.kernel.Name == "tiled32" {
			pc = p.pace
		}
	}
	if pc == nil || len(pc.times) == 0 {
		t.Fatalf("no paced dispatches measured (programs %v)", d.programs)
	}
	t.Logf("%d measured dispatches %v of %v work groups; slowest unmeasured call %v; the whole Mul %v", len(pc.times), pc.times, pc.groups, pc.slowestCall, whole)
	if pc.slowestCall > budget {
		t.Errorf("an unmeasured dispatch ran %v, over the %v budget", pc.slowestCall, budget)
	}
	for i, x := range pc.times {
		// One work group cannot be split: on softpipe one tiled32 group
		// of this K takes 55–85 ms, so there each dispatch must be one.
		if x > budget && pc.groups[i] > 1 {
			t.Errorf("a dispatch of %d work groups ran %v, over the %v budget", pc.groups[i], x, budget)
		}
	}
	if whole < 2*budget {
		t.Skipf("this device ran the product in %v: too fast to show pacing", whole)
	}
}
