package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
)

// checkDevices, where -devices was given (f.group), reads its list into
// f.devices and refuses the flags a group's rows do not take: a group
// measures the fast kernel in float32, C's column panels shared out,
// nothing split along K. It sets *kernels to fast, which runGroup
// replaces with the group's two rows.
func (f *benchFlags) checkDevices(devices string, kernels *string, kernelsSet bool) error {
	if !f.group {
		return nil
	}
	var err error
	f.devices, err = checkDevicesFor("bench", devices, f.dev,
		groupRefusal{kernelsSet && strings.TrimSpace(*kernels) != "fast", fmt.Sprintf("-devices and -kernels %s: a group measures its fast kernel end to end; leave -kernels out", *kernels)},
		groupRefusal{f.splitK > 1, "-devices and -split-k: a group shares out C's column panels and splits no product along K"},
		groupRefusal{f.typ == typeF64, "-devices and -type f64: a group multiplies in float32"})
	*kernels = "fast"
	return err
}

// runGroup runs glmul bench -devices: for each shape, a row of the
// group's product and one of its first device's alone (groupShape).
func (f *benchFlags) runGroup(stdout, stderr io.Writer) error {
	h, err := holdGroup(f.dev, f.devices)
	if err != nil {
		return err
	}
	defer h.release()
	f.kernels = []string{groupKernel, groupOneKernel}
	info := h.all.Devices()[0].Info()
	f.warnDefaultShapes(info, stderr)
	return f.measureShapes(stdout, stderr, info, &h.abandoned,
		func(ctx context.Context, s [3]int, seed uint64, p *progress, done *finished[benchRow]) error {
			return f.groupShape(ctx, h, s, seed, p, done, stderr)
		})
}

// groupShape measures one shape over h's group, then over its first
// device alone, the same inputs for both (measureGroup), adding a row
// to done for each and stepping p. It stops at Ctrl-C (ctx done),
// returning context.Canceled.
func (f *benchFlags) groupShape(ctx context.Context, h *heldGroup, s [3]int, seed uint64, p *progress, done *finished[benchRow], stderr io.Writer) error {
	m, k, n := s[0], s[1], s[2]
	var in *measure.Inputs
	for _, kern := range f.kernels {
		if err := ctx.Err(); err != nil {
			return err
		}
		row := benchRow{M: m, K: k, N: n, Shape: fmt.Sprintf("%dx%dx%d", m, k, n), Kernel: kern, Type: "float32", Splits: 1}
		if err := checkHostMemory(m, k, n); err != nil {
			row.Skipped = err.Error()
			done.add(row, nil)
			continue
		}
		if in == nil {
			in = measure.NewInputs(m, k, n, seed)
		}
		r, err := measureGroup(ctx, h.group(kern), in, f.reps, f.mode)
		switch {
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return err
		case err != nil:
			row.Skipped, row.Failed = err.Error(), true
			done.add(row, func() {
				fmt.Fprintf(stderr, "glmul bench: %s %s: failed: %v\n", row.Shape, kern, err)
				p.step(fmt.Sprintf("bench %s %s: failed", row.Shape, kern))
			})
			continue
		}
		row.Spec, row.Source, row.Times = r.specs(), groupSource, r.Runs
		row.MedianMS, row.GFLOPS = float64(r.EndToEnd)/1e6, r.GFLOPS
		row.Validation, row.Valid = string(r.Validation.Mode), r.Validation.OK
		row.Panels, row.Devices = r.Panels, r.Devices
		done.add(row, func() {
			if !row.Valid {
				fmt.Fprintf(stderr, "glmul bench: %s %s: %v\n", row.Shape, kern, r.Validation.Err())
			}
			p.step(fmt.Sprintf("bench %s %s: %s GFLOPS", row.Shape, kern, report.FormatGFLOPS(row.GFLOPS)))
		})
	}
	return nil
}

// setVsOneDevice sets each measured group row's VsOneDevice, from the
// one-device row of its shape, and reports whether rows are a group's.
func setVsOneDevice(rows []benchRow) (group bool) {
	one := map[string]float64{}
	for _, r := range rows {
		group = group || r.Kernel == groupKernel || r.Kernel == groupOneKernel
		if r.Kernel == groupOneKernel && r.Skipped == "" {
			one[r.Shape] = r.MedianMS
		}
	}
	for i, r := range rows {
		if r.Kernel == groupKernel && r.Skipped == "" && r.MedianMS > 0 && one[r.Shape] > 0 {
			rows[i].VsOneDevice = one[r.Shape] / r.MedianMS
		}
	}
	return group
}

// vsOneDevice is a measured row's text cell for its speed over one
// device: the group's ratio, 1× for the one device, "-" unknown.
func vsOneDevice(r benchRow) string {
	switch {
	case r.Kernel == groupOneKernel:
		return "1×"
	case r.VsOneDevice > 0:
		return fmt.Sprintf("%.2f×", r.VsOneDevice)
	}
	return "-"
}

// groupPreamble says, for the text table, what the group's rows
// measured.
func groupPreamble(rows []benchRow) string {
	for _, r := range rows {
		if r.Kernel == groupKernel && len(r.Devices) > 0 {
			s := fmt.Sprintf("%s (EGL %s) and %s (EGL %d alone, through a group of one): whole products, host memory to host memory, median of -reps after 1 untimed",
				groupKernel, groupIndices(r.Devices), groupOneKernel, r.Devices[0].Index)
			if len(r.Devices) == 1 {
				s += "; one device in the group, so its ratio compares the device with itself"
			}
			return s
		}
	}
	return groupKernel + " and " + groupOneKernel + " (its first device alone): whole products, host memory to host memory"
}
