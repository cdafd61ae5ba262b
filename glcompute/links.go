package glcompute

import (
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/link"
)

// The packages built on a Device's internals, devgroup (units.go), reach
// them through package link, set here.
func init() {
	link.Member = func(dev any) {
		d := dev.(*Device)
		d.mustBeOpen()
		if d.borrowed {
			panic("devgroup: a borrowed Device cannot be in a group")
		}
	}
	link.Product = func(dev any, c, a, b blas32.General, opts any) bool {
		o := opts.(*MulOptions)
		if checkProduct(dims32(c), dims32(a), dims32(b)) {
			dev.(*Device).emptyProduct(o)
			return true
		}
		if o != nil {
			o.check()
		}
		return false
	}
	link.PlanUnit = func(dev, opts any, m, k, cols int) (any, error) {
		return dev.(*Device).planUnit(m, k, cols, opts.(*MulOptions))
	}
	link.RunUnits = func(dev, plan any, c, a, b blas32.General, claim link.Claim, ready func()) (any, error) {
		d, hp := dev.(*Device), plan.(hostPlan)
		var t Timings
		var err error
		d.call(func() { t, err = d.mulUnits(c, a, b, &hp, claim, ready) })
		d.worked()
		return t, err
	}
}
