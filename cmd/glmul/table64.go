package main

import (
	"fmt"
	"io"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/table"
	"github.com/glmul/glmul/cpu"
)

// glmul table -type f64: the paper's Table 1 in float64. The naive CPU
// loop runs in float64 (cpu.NaiveRows64), gonum's Dgemm is the optimized
// CPU peer (Sgemm's in float32), and each GPU kernel is dfast through
// glcompute.Device.Mul64 (measure.Product64), validated in float64
// (validate.Check64). The table records its type (table.Table.Type), which
// -from checks against -type; the paper's published table is float32, so
// -compare paper is refused for a float64 one.

// tableKernels reads -kernels (list; set: given) for -type typ: with
// f64, float64 kernels (kernel64), dfast where -kernels was left out.
func tableKernels(typ, list string, set bool) ([]string, error) {
	if typ == typeF32 {
		return parseKernels("table: -kernels", list)
	}
	if !set {
		list = "dfast"
	}
	return parseKernels64("table: -kernels", list, 0)
}

// holdDevice checks that the host holds each size's A, B and C in the
// table's type, opens the device, and, with -type f64, multiplies 1×1
// float64 matrices with the first kernel, so that a device without float64
// (OpenGL ES) or a kernel it cannot run fails before anything is measured.
func (f *tableFlags) holdDevice(stderr io.Writer) (*heldDevice, error) {
	if f.typ == typeF64 {
		for _, n := range f.sizes {
			if err := checkHostMemory64(n, n, n); err != nil {
				return nil, err
			}
		}
		h, err := f.dev.hold(stderr, nil)
		if err != nil {
			return nil, err
		}
		if err := probeFloat64(h.Device, f.kernels[0]); err != nil {
			h.release()
			return nil, err
		}
		return h, nil
	}
	var squares [][3]int
	for _, n := range f.sizes {
		if err := checkHostMemory(n, n, n); err != nil {
			return nil, err
		}
		squares = append(squares, [3]int{n, n, n})
	}
	return f.dev.hold(stderr, f.kernels, squares...)
}

// row64 is row in float64: the naive loop in float64, gonum's Dgemm, and
// each dfast kernel through Mul64, validated in float64.
func (m *tableMeasurer) row64(n int, kernels []string, cpuMax int, seed uint64) (table.Row, error) {
	r := table.Row{N: n}
	in := measure.NewInputs64(n, n, n, seed, nil)
	a, b, c := in.A, in.B, in.C
	err := m.cpuColumns(&r, cpuMax, func(i0, i1 int) { cpu.NaiveRows64(c, a, b, i0, i1) }, func() { cpu.Dgemm(c, a, b) })
	if err != nil {
		return r, err
	}
	return r, m.gpuColumns(&r, kernels, func(k string) (measure.Result, error) {
		return measure.Product64(m.dev, in, measure.Options{Kernel: k, Warmup: 1, Reps: m.reps, Context: m.ctx})
	})
}

// checkFromType checks a table read with -from against -type, where it
// was given, and -compare paper against its type: a float64 table is not
// printed as the float32 one asked for (nor the other way round), nor
// compared with the paper's float32 figures.
func (f *tableFlags) checkFromType(t *table.Table) error {
	if want := typeName(f.typ); f.typeSet && t.ElemType() != want {
		return usagef("table: -type %s: %s holds a %s table (%s), not %s: leave -type out to print it as it is, or measure a %s table with glmul table -type %s",
			f.typ, f.from, t.ElemType(), t.Command, want, want, f.typ)
	}
	if f.compare && t.ElemType() == table.Float64 {
		return errComparePaper64(fmt.Sprintf("%s holds", f.from))
	}
	return nil
}

// errComparePaper64 refuses -compare paper for a float64 table (what: who
// says it is one, "-type f64 measures" or "FILE holds").
func errComparePaper64(what string) error {
	return usagef("table: -compare paper: %s a float64 table, and the paper's Table 1 is float32: its ratios would compare two element types; leave -compare out, or compare a float32 table (-type f32)", what)
}
