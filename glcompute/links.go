package glcompute

import (
	"context"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute/internal/link"
)

// The packages built on a Device's internals, devgroup (units.go),
// glblas, pinned, stream and tuner, reach them through package link, set here.
func init() {
	linkGroup()
	linkStream()
	linkBLAS()
	link.NewPinned = func(dev any, rows, cols int) (blas32.General, func(), error) {
		h, err := dev.(*Device).newHostMatrix(rows, cols)
		if err != nil {
			return blas32.General{}, nil, err
		}
		return h.General, h.Release, nil
	}
	link.Tuning = func(dev any) any { return dev.(*Device).tuning() }
}

// linkGroup sets devgroup's functions.
func linkGroup() {
	link.Member = func(dev any) {
		d := dev.(*Device)
		d.mustBeOpen()
		if d.borrowed {
			panic("devgroup: a borrowed Device cannot be in a group")
		}
	}
	link.Product = func(dev any, c, a, b blas32.General, opts any) bool {
		o, _ := opts.(*MulOptions)
		if checkProduct(dims32(c), dims32(a), dims32(b)) {
			dev.(*Device).emptyProduct(o)
			return true
		}
		if o != nil {
			o.check()
		}
		return false
	}
	link.PlanUnit = func(dev, opts any, m, k, cols, widest int, streamed bool) (any, error) {
		o, _ := opts.(*MulOptions)
		return dev.(*Device).planUnit(m, k, cols, widest, o, streamed)
	}
	link.Options = func(opts any) {
		if o, _ := opts.(*Options); o != nil {
			o.check()
		}
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

// linkStream sets stream's functions.
func linkStream() {
	link.Own = func(dev any, who string) {
		d := dev.(*Device)
		d.mustBeOpen()
		if d.isReleased() {
			panic("glcompute: use of a released Device")
		}
		if d.borrowed {
			panic(who)
		}
	}
	link.Binding = func(dev any, max int64) int64 { return dev.(*Device).streamBinding(max) }
	link.MulKernel = func(c, a, b any, spec string) error {
		return c.(*Matrix).mulKernel(spec, a.(*Matrix), b.(*Matrix))
	}
	link.Hold = func(dev any, cancel context.CancelCauseFunc) (func(), error) {
		d := dev.(*Device)
		n, err := d.startStream(cancel)
		if err != nil {
			return nil, err
		}
		return func() { d.endStream(n) }, nil
	}
}

// linkBLAS sets glblas's functions.
func linkBLAS() {
	link.Driver = func(dev any) any { return dev.(*Device).tuningDriver() }
	link.Usable = func(dev any, shapes ...[2]int) bool {
		d := dev.(*Device)
		if d.isReleased() {
			return false
		}
		for _, s := range shapes {
			if d.checkShape(s[0], s[1], 1) != nil {
				return false
			}
		}
		return true
	}
	link.Product64 = func(dev any, c blas64.General, tA blas.Transpose, a blas64.General, tB blas.Transpose, b blas64.General) error {
		d := dev.(*Device)
		if err := d.float64Support(); err != nil {
			return err
		}
		_, err := d.product64(c, tA, a, tB, b, nil)
		return err
	}
	link.FirstTold = func(dev any, bit uint32) bool { return dev.(*Device).told64.Or(bit)&bit == 0 }
	link.Runs64 = func(dev any) int64 { return dev.(*Device).runs64.Load() }
}

// streamBinding is the most bytes a streamed product puts in one storage
// binding: the driver's block, lowered to max where positive.
func (d *Device) streamBinding(max int64) int64 {
	binding := min(d.info.MaxSSBOBlockSize, 4*maxIndex)
	if max > 0 {
		binding = min(binding, max)
	}
	return binding
}
