package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/devgroup"
	"github.com/glmul/glmul/validate"
)

// bench -devices and table -devices measure two products a shape, each
// end to end (host memory to host memory, wall clock) through
// devgroup.Group.Mul: the group's, and its first device's alone, through
// a group of that one device, so that the ratio of the two compares the
// same code path.
const (
	groupKernel    = "group"      // the column or row of the whole group
	groupOneKernel = "one-device" // of the group's first device alone
	// groupSource is the rows' timing source: whole products.
	groupSource = "wall-end-to-end"
	// groupWarmup is the untimed products before the timed ones, as the
	// main command's -devices takes -warmup 1 by default.
	groupWarmup = 1
	// groupWarmupRule says so, in table's record of the warm-up.
	groupWarmupRule = "1 untimed product over the group (or the device alone) before the timed ones, no more (-devices)"
)

// heldGroup is a subcommand's group of devices and the group of its
// first device alone; both are released when the command ends unless its
// work was abandoned (awaitWork), as heldDevice's device.
type heldGroup struct {
	all, one  *devgroup.Group
	abandoned bool
}

// holdGroup opens a group on the EGL devices of list (nil: all) with the
// device flags' options (openGroup, as the main command's -devices).
func holdGroup(dev deviceFlags, list []int) (*heldGroup, error) {
	g, err := dev.openGroup(list)
	if err != nil {
		return nil, err
	}
	return &heldGroup{all: g, one: devgroup.New(g.Devices()[0])}, nil
}

// release releases the devices unless the work was abandoned: for a
// defer made before the work starts.
func (h *heldGroup) release() {
	if !h.abandoned {
		h.all.Release()
	}
}

// group returns the group that kernel (groupKernel or groupOneKernel)
// names.
func (h *heldGroup) group(kernel string) *devgroup.Group {
	if kernel == groupOneKernel {
		return h.one
	}
	return h.all
}

// describe names the group's devices, each as "EGL n: vendor | renderer
// | API", for a report's device line.
func (h *heldGroup) describe() string {
	var s []string
	for i, d := range h.all.Devices() {
		info := d.Info()
		s = append(s, fmt.Sprintf("EGL %d: %s | %s | %s", eglIndex(info, i), info.Vendor, info.Renderer, measure.API(info)))
	}
	return strings.Join(s, "; ")
}

// groupMul is Group.Mul, a variable so that a test can make a run write
// nothing.
var groupMul = (*devgroup.Group).Mul

// measureGroup measures in's product over g: groupWarmup untimed
// products and reps timed ones, each g.Mul with the default fast kernel,
// C poisoned with NaN before the first and the last, then C checked in
// mode: the last run must have written all of it. The figures are
// groupRun.fill's. Ctrl-C (ctx done) stops it with ctx's error: a series
// counts a product measured in full or not at all.
func measureGroup(ctx context.Context, g *devgroup.Group, in *measure.Inputs, reps int, mode validate.Mode) (groupRun, error) {
	r := groupRun{M: in.A.Rows, K: in.A.Cols, N: in.B.Cols, Seed: in.Seed, Warmup: groupWarmup}
	mo := &glcompute.MulOptions{Kernel: "fast", Context: ctx}
	for i := range groupWarmup + reps {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if i == 0 || i == groupWarmup+reps-1 {
			in.PoisonC()
		}
		t, err := groupMul(g, in.C, in.A, in.B, mo)
		if err != nil {
			return r, err
		}
		r.add(i, t)
	}
	r.Validation = measure.StartCheck(mode, in, false).Check(nil)
	r.fill(g)
	return r, nil
}

// specs names the kernels r's devices ran, each once, in their order.
func (r groupRun) specs() string {
	var ks []string
	for _, d := range r.Devices {
		if d.Kernel != "" && !slices.Contains(ks, d.Kernel) {
			ks = append(ks, d.Kernel)
		}
	}
	return strings.Join(ks, ",")
}

// groupIndices lists the EGL indices of a group's devices: "1,2".
func groupIndices(devs []groupDeviceRow) string {
	var s []string
	for _, d := range devs {
		s = append(s, fmt.Sprint(d.Index))
	}
	return strings.Join(s, ",")
}

// asResult gives r as a measure.Result whose times are r's end-to-end
// runs (Source groupSource), for table's columns.
func (r groupRun) asResult() measure.Result {
	res := measure.Result{M: r.M, K: r.K, N: r.N, Kernel: r.specs(), Times: r.Runs, Source: groupSource, Validation: r.Validation}
	res.Timings.EndToEnd = r.EndToEnd
	res.Timings.WarmupRule = groupWarmupRule
	return res
}
