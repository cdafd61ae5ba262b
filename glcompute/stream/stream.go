// Package stream multiplies matrices that need not fit in memory on one
// glcompute Device: A read by panels of rows (a RowReader: a file, say),
// B whole, C written by rows as it comes (a RowWriter), with reading, the
// GPU, a check and writing overlapping (Mul); MulDevices shares the
// panels among several Devices (a devgroup.Group's), each taking the next
// as it becomes free. glmul mul is built on it.
//
// # float64
//
// Mul64 streams a float64 product through the same four stages: A read
// by panels (a RowReader64), C written by rows (a RowWriter64), each panel
// checked (Options.Check64). Its GPU stage multiplies each panel host to
// host with glcompute.Device.Mul64, which uploads B with every panel
// (Device.NewMatrix64 keeps a float64 matrix on the GPU, but not in the
// column and K panels a B over one storage binding needs, which Mul64
// plans), so B is a matrix in host memory, lent by the caller, rather than
// read. glmul mul -type f64 is built on it.
package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/errs"
)

// RowReader is a matrix read by blocks of rows: a file read by panels
// (glmul's matfile.Source), or memory.
type RowReader interface {
	Rows() int
	Cols() int
	// ReadRows fills dst (dst.Cols = Cols(), any stride) with rows
	// [r0, r0+dst.Rows), leaving a stride's padding as it is.
	ReadRows(dst blas32.General, r0 int) error
}

// RowWriter takes a matrix's rows in order: a file written as they come
// (glmul's matfile.Sink), or memory.
type RowWriter interface {
	WriteRows(m blas32.General) error
}

// PanelCheck checks rows r0… of a streamed product's C (c) against the
// same rows of A (a). Mul calls it once a panel, in order, on a
// goroutine of its own, while later panels are read and computed.
type PanelCheck func(a, c blas32.General, r0 int)

// Options are the options of one Mul or Mul64. The zero value (or a nil
// *Options) checks nothing and uses panels of at most 64 MiB (Mul64: or
// B's size).
type Options struct {
	// Kernel names the kernel as glcompute.MulOptions.Kernel does (Mul64:
	// a float64 one, as Device.Mul64 takes it). Zero value "":
	// the device's choice for a panel's shape.
	Kernel string
	// PanelBytes bounds the host memory of one panel of A and C together:
	// Mul keeps three of each (one being read or written, one on the
	// GPU, one being checked) and the GPU two; MulDevices 2·devices+1,
	// and each GPU two. Zero value: an eighth of A
	// and C together, between 4 MiB and 64 MiB. Mul64 keeps three too,
	// each of as many rows as PanelBytes holds, whatever their number
	// (Device.Mul64 plans its own pieces of a panel); zero value: 64 MiB
	// or B's size, whichever is larger, as Device.Mul64 uploads B with
	// every panel and a panel at least B's size keeps that upload to at
	// most what the panel's own rows cost.
	PanelBytes int64
	// Check, if set, is called once with B as read (k×n), on a goroutine
	// of its own while B is uploaded, and returns the check of each panel
	// of C (nil: none). A panel is written only after its check returned,
	// but a check cannot stop the product: it records what it finds, for
	// the caller to act on once Mul returns (or it cancels Context,
	// which stops the product before that panel is written). glmul mul
	// writes C to a temporary file that a failed check discards; rows
	// written to a FIFO or a device before then stay written. Mul64
	// panics where it is set.
	Check func(b blas32.General) PanelCheck
	// Check64 is Check for Mul64 (B as the caller lent it), whose float64
	// panels it checks as Check does Mul's; Mul panics where it is set.
	// glmul mul -type f64 cancels Context at the first panel that fails,
	// so that the rest is neither computed nor written.
	Check64 func(b blas64.General) func(a, c blas64.General, r0 int)
	// Progress, if set, is called as each panel of C is written, with the
	// panels written and their total, on Mul's goroutine.
	Progress func(done, total int)
	// Context, if set, stops the product between panels.
	Context context.Context
	// HostLimit, if positive, is the most host memory the product may
	// take (B and its panels, Result.HostBytes; Mul64's B counted though
	// the caller holds it): a product that needs more fails with
	// ErrHostMemory before anything is read.
	HostLimit int64
	// MaxBinding lowers the bytes one matrix may take in one shader
	// storage binding below the driver's, as glcompute.MulOptions.MaxBinding does:
	// a B over it is held on the GPU in column panels (Result.BPanels),
	// a K too long for it cut into panels (Result.KPanels), so small
	// products exercise those paths; Mul64 passes it to Device.Mul64,
	// which makes its own panels. Zero value: the driver's limit.
	MaxBinding int64
}

// ErrHostMemory is the error, wrapped, of a Mul or Mul64 that needs more
// host memory than Options.HostLimit.
var ErrHostMemory = errors.New("not enough host memory")

// Panel sizes (Options.PanelBytes).
const (
	defaultPanelBytes = 64 << 20
	minPanelBytes     = 4 << 20
)

// Result is one streamed product's figures: its shape and panels,
// and each stage's busy time (the stages overlap, so they add up to more
// than Wall).
type Result struct {
	M, K, N int
	// Kernel is the kernel of a whole panel: Mul's choice, or the one
	// Device.Mul64 ran for Mul64's first panel.
	Kernel    string
	Panels    int
	PanelRows int
	// BPanels is how many column panels B is held in on the GPU, each
	// within one shader storage binding (1: B whole), and KPanels how
	// many panels K is cut into where a row of A is too long for one
	// (1: K whole), their products summed in C on the GPU.
	BPanels, KPanels int
	// ReadB is the time spent reading B (Mul64: none, B being lent),
	// Read reading A's panels, GPU the GPU stage's (uploads, products,
	// readbacks; over several devices, theirs summed), Check the panels'
	// checks and Write writing C.
	ReadB, Read, GPU, Check, Write time.Duration
	// Devices has one share a device, in the order given (Mul and Mul64:
	// one; none for an empty product).
	Devices []DeviceShare
	// Wall runs from the first read to the last panel written.
	Wall time.Duration
	// HostBytes is the host memory of the panels and B that Mul
	// allocated; Mul64's, the panels' and the B it was lent.
	HostBytes int64
}

// Flop is the product's floating-point operations, 2·M·N·K.
func (r Result) Flop() float64 { return 2 * float64(r.M) * float64(r.N) * float64(r.K) }

// plan is a streamed product's panels: A (m×k) by B (k×n) in panels
// of rows rows, of elem bytes an element; kp and np are k and n rounded up
// to 4 floats (newPlan), the padded layout the fast kernel reads and
// writes whole vec4s of, or k and n (newPlan64). On the GPU, B is
// held in bpanels column panels of cols columns (the last one what is
// left of np), each panel of A multiplied by each into the same columns
// of its C, and K, where a row of A is too long for that, in kpanels
// panels of kper (the last one what is left of kp), so that every matrix
// there fits one storage binding (fitBinding).
type plan struct {
	m, k, n, kp, np int
	elem            int64
	rows, panels    int
	cols, bpanels   int
	kper, kpanels   int
	held            int // panels of host memory that circulate (heldPanels)
}

// newPlan sizes the panels of an m×k by k×n float32 product to panelBytes
// of A and C (zero: an eighth of both, within [minPanelBytes,
// defaultPanelBytes]), rows a multiple of 64 where more than 64.
func newPlan(m, k, n int, panelBytes int64) plan {
	p := plan{m: m, k: k, n: n, kp: (k + 3) / 4 * 4, np: (n + 3) / 4 * 4, elem: 4, held: hostPanels}
	p.cols, p.bpanels, p.kper, p.kpanels = p.np, 1, p.kp, 1
	if m == 0 || n == 0 {
		return p // no panels
	}
	row := 4 * int64(p.kp+p.np)
	if panelBytes <= 0 {
		panelBytes = min(defaultPanelBytes, max(minPanelBytes, row*int64(m)/8))
	}
	p.rows = int(min(int64(m), max(1, panelBytes/row)))
	if p.rows > 64 && p.rows < m {
		p.rows = p.rows / 64 * 64
	}
	p.panels = (m + p.rows - 1) / p.rows
	return p
}

// newPlan64 sizes the panels of an m×k by k×n float64 product to
// panelBytes of A and C (zero: defaultPanelBytes or B's size, whichever
// is larger; Options.PanelBytes says why). Device.Mul64 takes host
// matrices of any shape and makes its own pieces of them, so nothing is
// padded, B and the panels stay whole (one column and one K panel), and
// the rows are as many as panelBytes holds: a caller that sized its
// panels by rows (glmul's, to the host's memory) gets those rows.
func newPlan64(m, k, n int, panelBytes int64) plan {
	p := plan{m: m, k: k, n: n, kp: k, np: n, elem: 8, cols: n, bpanels: 1, kper: k, kpanels: 1, held: hostPanels}
	if m == 0 || n == 0 {
		return p // no panels
	}
	row := 8 * int64(k+n)
	if panelBytes <= 0 {
		panelBytes = max(defaultPanelBytes, 8*int64(k)*int64(n))
	}
	p.rows = int(min(int64(m), max(1, panelBytes/row)))
	p.panels = (m + p.rows - 1) / p.rows
	return p
}

// empty reports whether the product runs nothing on the GPU: K = 0
// (zeroStream), or no panels.
func (p plan) empty() bool { return p.k == 0 || p.panels == 0 }

// fitBinding makes every matrix of the product on the GPU fit binding
// bytes: where a row of A and 4 columns of B do not, K in panels with
// which 64 columns of B (or all, fewer) do; a panel of A (rows×kper:
// fewer rows where needed) and, where B does not fit whole, B and each
// panel's C in column panels (a multiple of 64 columns, or of 4 under
// 64). It fails, in the user's shapes, where not even 4 rows of B fit.
func (p *plan) fitBinding(binding int64) error {
	if 16*int64(p.kp) > binding {
		p.kper = int(binding / (4 * int64(min(p.np, 64))))
		if p.kper >= 64 {
			p.kper = p.kper / 64 * 64
		} else {
			p.kper = p.kper / 4 * 4
		}
		if p.kper < 4 {
			return fmt.Errorf("%w: the %d×%d by %d×%d product cannot run: 4 rows of B take more than one shader storage binding (%s)",
				glcompute.ErrTooLarge, p.m, p.k, p.k, p.n, errs.FormatBytes(float64(binding)))
		}
		p.kpanels = (p.kp + p.kper - 1) / p.kper
	}
	row := 4 * int64(p.kper) // bytes of a row of A's K panel, and of a column of B's
	if fit := int(binding / row); p.rows > fit {
		p.rows = fit
		if p.rows > 64 {
			p.rows = p.rows / 64 * 64
		}
		p.panels = (p.m + p.rows - 1) / p.rows
	}
	tall := 4 * int64(max(p.kper, p.rows)) // bytes of a column of B's K panel or of a panel's C
	if tall*int64(p.np) <= binding {
		return nil
	}
	p.cols = int(binding / tall)
	if p.cols >= 64 {
		p.cols = p.cols / 64 * 64
	} else {
		p.cols = p.cols / 4 * 4
	}
	p.bpanels = (p.np + p.cols - 1) / p.cols
	return nil
}

// kOf returns the first column of A and the columns of K panel q.
func (p plan) kOf(q int) (k0, cols int) {
	k0 = q * p.kper
	return k0, min(p.kper, p.kp-k0)
}

// colsOf returns the first column and the columns of B's column panel j.
func (p plan) colsOf(j int) (c0, cols int) {
	c0 = j * p.cols
	return c0, min(p.cols, p.np-c0)
}

// hostBytes is B's memory and the panels'; with K = 0, one panel of C's
// zeros (zeroStream); with no panels, nothing.
func (p plan) hostBytes() int64 {
	if p.empty() {
		return p.elem * int64(p.rows) * int64(p.np)
	}
	return p.elem * (int64(p.kp)*int64(p.np) + int64(min(p.held, p.panels))*int64(p.rows)*int64(p.kp+p.np))
}

// rowsOf returns the number of rows of panel i.
func (p plan) rowsOf(i int) int { return min(p.rows, p.m-i*p.rows) }

// readB reads B whole into a host matrix with its rows and columns padded
// to p's multiples of 4 with zeros, in blocks of rows of about
// defaultPanelBytes: once ctx is done (Release, say, which waits for the
// product), it stops between them with ctx's cause.
func readB(ctx context.Context, b RowReader, p plan, r *Result) (blas32.General, error) {
	t0 := time.Now()
	defer func() { r.ReadB = time.Since(t0) }()
	hb := blas32.General{Rows: p.kp, Cols: p.np, Stride: p.np, Data: make([]float32, p.kp*p.np)}
	per := int(max(1, defaultPanelBytes/(4*int64(p.np))))
	for r0 := 0; r0 < p.k; r0 += per {
		if ctx.Err() != nil {
			return hb, context.Cause(ctx)
		}
		block := blas32.General{Rows: min(per, p.k-r0), Cols: p.n, Stride: p.np, Data: hb.Data[r0*p.np:]}
		if err := b.ReadRows(block, r0); err != nil {
			return hb, err
		}
	}
	return hb, nil
}

// matrix is a panel's matrix type: blas32.General for Mul, blas64.General
// for Mul64, which fixes its element type. The stages are written once
// over it; newMatrix and blockView are the two places that reach a
// matrix's fields, in a type switch, as gonum's two General types hold
// the same fields in different orders (neither converts to the other,
// nor to one struct type a type parameter could share).
type matrix interface {
	blas32.General | blas64.General
}

// newMatrix allocates a rows×cols matrix, its stride cols.
func newMatrix[M matrix](rows, cols int) M {
	var m M
	switch m := any(&m).(type) {
	case *blas32.General:
		*m = blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float32, rows*cols)}
	case *blas64.General:
		*m = blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float64, rows*cols)}
	}
	return m
}

// rowsView returns the first rows rows and cols columns of m.
func rowsView[M matrix](m M, rows, cols int) M { return blockView(m, 0, rows, 0, cols) }

// blockView returns rows [r0, r0+rows) of m's columns [c0, c0+cols).
func blockView[M matrix](m M, r0, rows, c0, cols int) M {
	var v M
	switch w := any(&v).(type) {
	case *blas32.General:
		m := any(m).(blas32.General)
		*w = blas32.General{Rows: rows, Cols: cols, Stride: m.Stride, Data: block(m.Data, m.Stride, r0, rows, c0, cols)}
	case *blas64.General:
		m := any(m).(blas64.General)
		*w = blas64.General{Rows: rows, Cols: cols, Stride: m.Stride, Data: block(m.Data, m.Stride, r0, rows, c0, cols)}
	}
	return v
}

// block returns the elements of rows [r0, r0+rows) and columns [c0,
// c0+cols) of a matrix of row stride stride: from the first to the last.
func block[T float32 | float64](data []T, stride, r0, rows, c0, cols int) []T {
	first := r0*stride + c0
	return data[first : first+(rows-1)*stride+cols]
}

// panel is one panel's host memory: its index, and its rows of A (kp
// elements a row, the padding zero) and of C (np elements a row).
type panel[M matrix] struct {
	i     int
	a, c  M
	rerun bool // taken again from a device of a group that failed
}

// newPanel allocates a panel of p.rows rows.
func newPanel[M matrix](p plan) *panel[M] {
	return &panel[M]{a: newMatrix[M](p.rows, p.kp), c: newMatrix[M](p.rows, p.np)}
}

// errPanel wraps a GPU error with the panel it was at.
func errPanel(what string, p plan, i int, err error) error {
	r0 := i * p.rows
	return fmt.Errorf("%s rows %d to %d of C (panel %d of %d): %w", what, r0, r0+p.rowsOf(i)-1, i+1, p.panels, err)
}

// zeroStream writes the rows of an empty product's C, zeros where K = 0
// (none where C has no rows or columns), by p's panels, stopping between
// them once ctx is done.
func zeroStream[M matrix](ctx context.Context, c rowWriter[M], p plan, progress func(done, total int), r *Result) error {
	if p.panels == 0 {
		return nil
	}
	z := newMatrix[M](p.rows, p.np)
	for i := range p.panels {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err := timeInto(&r.Write, func() error { return c.WriteRows(rowsView(z, p.rowsOf(i), p.n)) }); err != nil {
			return err
		}
		if progress != nil {
			progress(i+1, p.panels)
		}
	}
	return nil
}
