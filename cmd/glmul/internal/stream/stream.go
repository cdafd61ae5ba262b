// Package stream multiplies matrices that live in files, C = A·B, in row
// panels: A is read, uploaded and multiplied, and C read back, checked
// and written, a panel of rows at a time, so that memory holds B and a few
// panels rather than A, B and C. Four stages overlap, each on its own
// goroutine: reading A's panels from the file (RowReader), the GPU (upload
// of a panel into a resident glcompute.Matrix, Gemm by B, readback of the
// last panel's C), checking each panel of C on the CPU (validate.Rows,
// Freivalds' method, or in full), and writing C (RowWriter). glmul mul
// runs here.
package stream

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/validate"
)

// RowReader is a matrix read by blocks of rows (matfile.Source).
type RowReader interface {
	Rows() int
	Cols() int
	// ReadRows fills dst (dst.Cols = Cols(), any stride) with rows
	// [r0, r0+dst.Rows), leaving a stride's padding as it is.
	ReadRows(dst blas32.General, r0 int) error
}

// RowWriter takes a matrix's rows in order (matfile.Sink).
type RowWriter interface {
	WriteRows(m blas32.General) error
}

// Options of one Product. The zero value validates as validate.Auto does,
// in panels of DefaultPanelBytes at most.
type Options struct {
	// Kernel names the GPU kernel as glcompute.MulOptions.Kernel reads it.
	// Zero value "": the device's choice for a panel's shape.
	Kernel string
	// PanelBytes bounds the host memory of one panel of A and C together:
	// Product keeps three of each (one being read or written, one on the
	// GPU, one being checked) and the GPU two. Zero value: an eighth of A
	// and C together, between MinPanelBytes and DefaultPanelBytes.
	PanelBytes int64
	// Validate is how C is checked, panel by panel: validate.Auto (the
	// zero value "" too) checks products up to AutoFullLimit in full and
	// larger ones by Freivalds' method; a panel with NaN
	// or Inf in its rows of A (or B with any) is checked in full, where
	// Freivalds' sums cannot tell where a NaN belongs.
	Validate validate.Mode
	// Seed draws Freivalds' vectors.
	Seed uint64
	// Progress, if set, is called as each panel of C is written, with the
	// panels written and their total.
	Progress func(done, total int)
	// Context, if set, stops the product between panels.
	Context context.Context
}

// AutoFullLimit is the largest product (M·N·K multiply-adds) that Auto
// checks in full here: a product from files to a file is bound by its
// reading and writing, and a full check costs as much as a product on
// the CPU, where Freivalds' method costs a pass over A and C. On llvmpipe's
// two cores: 4096×64×4096 (64 MiB of C) about a second in full, eight
// times NumPy's whole load, multiply and save, against 0.1 s; 4096×4096×1
// 342 ms in full against about 50 ms. validate.AutoFullLimit, for glmul's
// own random products, is 1024 times larger.
const AutoFullLimit = 1 << 20

// Panel sizes (Options.PanelBytes).
const (
	DefaultPanelBytes = 64 << 20
	MinPanelBytes     = 4 << 20
)

// Result is one product's figures: its shape and panels, each stage's busy
// time (the stages overlap, so they add up to more than Wall), and the
// validation.
type Result struct {
	M, K, N   int
	Kernel    string // the GPU kernel of a whole panel
	Panels    int
	PanelRows int
	// Read is the time spent reading A's panels (B's read is in ReadB),
	// GPU the GPU stage's (uploads, products, readbacks), Check the
	// validation's and Write writing C.
	ReadB, Read, GPU, Check, Write time.Duration
	// Wall runs from the first read to the last panel written.
	Wall       time.Duration
	Validation validate.Result
	// HostBytes is the host memory of the panels and B that Product
	// allocated.
	HostBytes int64
}

// Flop is the product's floating-point operations, 2·M·N·K.
func (r Result) Flop() float64 { return 2 * float64(r.M) * float64(r.N) * float64(r.K) }

// Product computes C = A·B on dev, reading A by panels from a, B whole
// from b, and writing C's rows in order to c. An error from any stage
// stops the others; what c received by then is incomplete (glmul writes
// through a temporary file that such an error discards).
func Product(dev *glcompute.Device, a, b RowReader, c RowWriter, o Options) (Result, error) {
	if a.Cols() != b.Rows() {
		panic("stream: A's columns and B's rows differ")
	}
	p := newPlan(a.Rows(), a.Cols(), b.Cols(), o.PanelBytes)
	r := Result{M: p.m, K: p.k, N: p.n, Panels: p.panels, PanelRows: p.rows, Kernel: o.Kernel}
	if o.Kernel == "" || o.Kernel == "fast" {
		r.Kernel = dev.KernelFor(p.rows, p.kp, p.np)
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	err := run(ctx, dev, p, a, b, c, o, &r)
	r.Wall = time.Since(start)
	r.HostBytes = p.hostBytes()
	return r, err
}

// readB reads B whole into a host matrix with its rows and columns padded
// to p's multiples of 4 with zeros.
func readB(b RowReader, p plan, r *Result) (blas32.General, error) {
	t0 := time.Now()
	hb := blas32.General{Rows: p.kp, Cols: p.np, Stride: p.np, Data: make([]float32, p.kp*p.np)}
	err := b.ReadRows(blas32.General{Rows: p.k, Cols: p.n, Stride: p.np, Data: hb.Data}, 0)
	r.ReadB = time.Since(t0)
	return hb, err
}

// plan is a product's panels: A (m×k) by B (k×n) in panels of rows rows;
// kp and np are k and n rounded up to 4 floats, the padded layout the
// fast kernel reads and writes whole vec4s of.
type plan struct {
	m, k, n, kp, np int
	rows, panels    int
}

// newPlan sizes the panels of an m×k by k×n product to panelBytes of A
// and C (zero: an eighth of both, within [MinPanelBytes,
// DefaultPanelBytes]), rows a multiple of 64 where more than 64.
func newPlan(m, k, n int, panelBytes int64) plan {
	p := plan{m: m, k: k, n: n, kp: (k + 3) / 4 * 4, np: (n + 3) / 4 * 4}
	row := 4 * int64(p.kp+p.np)
	if panelBytes <= 0 {
		panelBytes = min(DefaultPanelBytes, max(MinPanelBytes, row*int64(m)/8))
	}
	p.rows = int(min(int64(m), max(1, panelBytes/row)))
	if p.rows > 64 && p.rows < m {
		p.rows = p.rows / 64 * 64
	}
	p.panels = (m + p.rows - 1) / p.rows
	return p
}

// Panels returns how many panels, of how many rows, Product cuts an m×k
// by k×n product into with Options.PanelBytes panelBytes.
func Panels(m, k, n int, panelBytes int64) (panels, rows int) {
	p := newPlan(m, k, n, panelBytes)
	return p.panels, p.rows
}

// HostBytes is the host memory Product takes for an m×k by k×n product
// with Options.PanelBytes panelBytes: B, and the panels of A and C.
func HostBytes(m, k, n int, panelBytes int64) int64 { return newPlan(m, k, n, panelBytes).hostBytes() }

// hostBytes is B's memory and the panels'.
func (p plan) hostBytes() int64 {
	return 4 * (int64(p.kp)*int64(p.np) + int64(min(hostPanels, p.panels))*int64(p.rows)*int64(p.kp+p.np))
}

// rowsOf returns the number of rows of panel i.
func (p plan) rowsOf(i int) int { return min(p.rows, p.m-i*p.rows) }

// panel is one panel's host memory: its rows of A (kp floats a row, the
// padding zero) and of C (np floats a row).
type panel struct {
	i    int
	a, c blas32.General
}

// newPanel allocates a panel of p.rows rows.
func newPanel(p plan) *panel {
	return &panel{a: blas32.General{Rows: p.rows, Cols: p.kp, Stride: p.kp, Data: make([]float32, p.rows*p.kp)},
		c: blas32.General{Rows: p.rows, Cols: p.np, Stride: p.np, Data: make([]float32, p.rows*p.np)}}
}

// view returns the first rows rows and cols columns of m.
func view(m blas32.General, rows, cols int) blas32.General {
	return blas32.General{Rows: rows, Cols: cols, Stride: m.Stride, Data: m.Data[:(rows-1)*m.Stride+cols]}
}

// checker validates C panel by panel (Options.Validate): Freivalds'
// method where the mode is Freivalds and the panel's rows of A are finite,
// in full otherwise.
type checker struct {
	mode validate.Mode
	b    blas32.General     // B as read (k×n)
	rows *validate.Rows     // Freivalds' vectors, for Freivalds panels
	full *validate.FullRows // B in float64, made for the first full panel
	once sync.Once
}

// newChecker prepares the check of an m×k by k×n product by hb (B
// padded): Auto resolved by the product's size, and Freivalds' vectors
// drawn once.
func newChecker(o Options, p plan, hb blas32.General) *checker {
	mode := o.Validate
	if mode == "" || mode == validate.Auto {
		mode = validate.Freivalds
		if float64(p.m)*float64(p.k)*float64(p.n) <= AutoFullLimit {
			mode = validate.Full
		}
	}
	b := view(hb, p.k, p.n)
	if mode == validate.Freivalds && !finite(b) {
		mode = validate.Full
	}
	ch := &checker{mode: mode, b: b}
	if mode == validate.Freivalds {
		ch.rows = validate.NewRows(b, validate.FreivaldsVectors, rand.New(rand.NewPCG(o.Seed, 2)))
	}
	return ch
}

// check checks rows r0… of C (c) against the same rows of A (a).
func (ch *checker) check(a, c blas32.General, r0 int) {
	switch {
	case ch.mode == validate.None:
	case ch.mode == validate.Freivalds && finite(a):
		ch.rows.Check(a, c, r0)
	default:
		ch.once.Do(func() { ch.full = validate.NewFullRows(ch.b) })
		ch.full.Check(a, c, r0)
	}
}

// result is the worst of the panels' checks: Freivalds', unless a panel
// checked in full (rows with NaN or Inf) did worse.
func (ch *checker) result() validate.Result {
	switch {
	case ch.mode == validate.None:
		return validate.Result{Mode: validate.None, OK: true}
	case ch.rows == nil && ch.full == nil:
		return validate.Result{Mode: ch.mode, OK: true, Row: -1, Col: -1}
	case ch.rows == nil:
		return ch.full.Result()
	}
	r := ch.rows.Result()
	if ch.full != nil {
		if f := ch.full.Result(); f.WorstRatio > r.WorstRatio || !f.OK {
			r = f
		}
	}
	return r
}

// finite reports whether every element of m is finite.
func finite(m blas32.General) bool {
	for i := 0; i < m.Rows; i++ {
		for _, v := range m.Data[i*m.Stride : i*m.Stride+m.Cols] {
			if v-v != 0 { // NaN or ±Inf
				return false
			}
		}
	}
	return true
}

// errPanel wraps a GPU error with the panel it was at.
func errPanel(what string, p plan, i int, err error) error {
	r0 := i * p.rows
	return fmt.Errorf("%s rows %d to %d of C (panel %d of %d): %w", what, r0, r0+p.rowsOf(i)-1, i+1, p.panels, err)
}
