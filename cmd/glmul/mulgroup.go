package main

import (
	"io"

	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/internal/outfile"
)

// checkGroup checks glmul mul -devices LIST (checkDevicesFor) and
// refuses what a group does not take, as the main command's -devices does.
func (f *mulFlags) checkGroup(list string) ([]int, error) {
	return checkDevicesFor("mul", list, f.dev, groupRefusal{f.typ == typeF64, "-devices and -type f64: float64 panels stream on one device"})
}

// runGroup is run over the group of -devices: the product's panels of A
// go to each device as it becomes free (stream.MulDevices). The group is
// released on this goroutine, after the product, as run's device is.
func (j *mulJob) runGroup(stdout io.Writer, size uint64) error {
	g, err := j.f.dev.openGroup(j.f.devices)
	if err != nil {
		return err
	}
	defer g.Release()
	devs := g.Devices()
	for _, d := range devs {
		noteKernelChoice(d, j.stderr)
		j.r.Group = append(j.r.Group, d.Info())
	}
	j.r.Device = devs[0].Info()
	return outfile.WriteSized(j.f.out, stdout, size, func(w io.Writer) error { return j.into(devs, w) })
}

// groupRows are the report's rows of r's group (none for one device).
func (r mulResult) groupRows() []report.MulDevice {
	var rows []report.MulDevice
	for i, info := range r.Group {
		if i >= len(r.Devices) { // the product stopped before its shares were made
			break
		}
		sh := r.Devices[i]
		row := report.MulDevice{Index: eglIndex(info, i), Renderer: info.Renderer, Kernel: sh.Kernel, Panels: sh.Panels, Reruns: sh.Reruns, Busy: sh.GPU}
		if sh.Err != nil {
			row.Error = sh.Err.Error()
		}
		rows = append(rows, row)
	}
	return rows
}
