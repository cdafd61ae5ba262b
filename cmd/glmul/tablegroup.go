package main

import (
	"fmt"
	"io"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/table"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/validate"
)

// glmul table -devices LIST: the GPU columns are the group's product and
// its first device's alone, each end to end through devgroup.Group.Mul
// (measureGroup, as bench -devices measures them), named groupKernel and
// groupOneKernel; the CPU columns, and the speed-ups against them, are
// as without it.

// checkDevices, where -devices was given (f.group), reads its list into
// f.devices, refuses the flags a group's columns do not take, and makes
// f.kernels the group's two columns.
func (f *tableFlags) checkDevices(devices string, kernelsSet bool) error {
	if !f.group {
		return nil
	}
	var err error
	f.devices, err = checkDevicesFor("table", devices, f.dev,
		groupRefusal{kernelsSet, "-devices and -kernels: a group's columns are its fast kernel end to end, and its first device's alone; leave -kernels out"},
		groupRefusal{f.typ == typeF64, "-devices and -type f64: a group multiplies in float32"})
	f.kernels = []string{groupKernel, groupOneKernel}
	return err
}

// tableOn is what glmul table measures on: a device, or with -devices a
// group (group set).
type tableOn struct {
	dev   *heldDevice
	group *heldGroup
}

// hold opens the device (holdDevice), or with -devices the group, once
// the host is found to hold each size's A, B and C.
func (f *tableFlags) hold(stderr io.Writer) (tableOn, error) {
	if !f.group {
		h, err := f.holdDevice(stderr)
		return tableOn{dev: h}, err
	}
	for _, n := range f.sizes {
		if err := checkHostMemory(n, n, n); err != nil {
			return tableOn{}, err
		}
	}
	g, err := holdGroup(f.dev, f.devices)
	return tableOn{group: g}, err
}

// device is the device measured on, nil for a group.
func (o tableOn) device() *glcompute.Device {
	if o.dev == nil {
		return nil
	}
	return o.dev.Device
}

// info is the device's Info, or the group's first device's.
func (o tableOn) info() glcompute.Info {
	if o.group != nil {
		return o.group.all.Devices()[0].Info()
	}
	return o.dev.Info()
}

// describe is the table's device line: "vendor | renderer | API", a
// group's for each device with its EGL index.
func (o tableOn) describe() string {
	if o.group != nil {
		return o.group.describe()
	}
	info := o.dev.Info()
	return fmt.Sprintf("%s | %s | %s", info.Vendor, info.Renderer, measure.API(info))
}

// abandon records that the work was abandoned (awaitWork), so that
// release leaves the devices alone.
func (o tableOn) abandon(abandoned bool) {
	if o.group != nil {
		o.group.abandoned = abandoned
	} else {
		o.dev.abandoned = abandoned
	}
}

// release releases the device or the group, unless abandoned.
func (o tableOn) release() {
	if o.group != nil {
		o.group.release()
	} else {
		o.dev.release()
	}
}

// rowGroup is row with the group's GPU columns (kernels: groupKernel,
// groupOneKernel), each carrying the EGL indices of its devices.
func (m *tableMeasurer) rowGroup(n int, kernels []string, cpuMax int, seed uint64) (table.Row, error) {
	var devices []string // a column's, in kernels' order
	r, err := m.rowWith(n, kernels, cpuMax, seed, func(in *measure.Inputs, k string) (measure.Result, error) {
		g, err := measureGroup(m.ctx, m.group.group(k), in, m.reps, validate.Auto)
		devices = append(devices, groupIndices(g.Devices))
		return g.asResult(), err
	})
	for i := range r.GPU {
		r.GPU[i].Devices = devices[i]
	}
	return r, err
}
