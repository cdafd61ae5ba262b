package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/stream"
	"github.com/glmul/glmul/internal/outfile"
	"github.com/glmul/glmul/internal/streamhook"
	"github.com/glmul/glmul/validate"
)

// glmul mul -type f64 streams as the float32 product does, through
// stream.Mul64, the same four stages in float64: B is read whole as
// float64 and lent to it, then A is read a panel of rows at a time
// (matfile.ReadRows64, rows64); each panel is multiplied by
// glcompute.Device.Mul64, checked by validate.Check64 as the product of
// A's panel by B (check64), and written as float64 through a
// matfile.Sink64, through outfile as the float32 product's C is: -o is
// replaced only once every panel is validated. Reading, the GPU, the
// check and writing overlap; host memory holds B and three panels of A
// and C (panelRows64). A product with an empty dimension is
// emptyProduct's, as in float32.

// panelsInFlight is how many panels of A and C a float64 product holds
// in host memory: stream.Mul64's, one being read, one on the GPU, one
// being checked or written (its Result.HostBytes counts them, which
// TestMulFloat64Panels checks against this).
const panelsInFlight = 3

// c64Bytes is the least an m×n float64 C takes in out's format: .npy's
// 8 bytes an element, or .mtx's 6 ("i j v" and a newline).
func c64Bytes(out string, m, n int) uint64 {
	if format, _ := matfile.OutputFormat(out); format == ".mtx" {
		return cBytes(out, m, n)
	}
	return 8 * uint64(m) * uint64(n)
}

// mul64PanelBytes is the least host memory a float64 panel's rows of A
// and C take together (8·(K+N) bytes a row), as stream.Mul's float32
// panels take at most 64 MiB.
const mul64PanelBytes = 64 << 20

// panelRows64 returns the rows of A (and C) in a panel of an m×k by k×n
// float64 product: as many as make mul64PanelBytes, or as many bytes as
// B where B is larger. Device.Mul64 multiplies whole matrices, so B is
// uploaded again for each panel: a panel of A and C at least B's size
// keeps that upload to at most what the panel's own rows cost to move
// (and Freivalds' projection of B, made again for each panel's check, to
// at most its rows' side of the check). So host memory holds B and
// panelsInFlight panels of at most max(64 MiB, B) each, but no more than
// half the memory beside B, where the machine's is known, counting the
// full check's four float64s an element of one panel's C where full is
// set (as checkPanelMemory64 does); at least one row, at most m. A
// variable, so that a test can make the panels a few rows.
var panelRows64 = func(m, k, n int, full bool) int {
	row, b := max(8*(float64(k)+float64(n)), 1), 8*float64(k)*float64(n)
	held := panelsInFlight * row // host bytes a row of the panels holds
	if full {
		held += 32 * float64(n)
	}
	rows := max(mul64PanelBytes, b) / row
	if total, ok := hostMemory(); ok && b+rows*held > total {
		rows = max(0, total-b) / 2 / held
	}
	return max(1, min(m, int(math.Min(rows, math.MaxInt32))))
}

// mul64 multiplies A by B in float64 into f.out, panel by panel, as
// runMul does in float32, and reports it; no dimension is empty
// (emptyProduct's).
func mul64(f *mulFlags, a, b matfile.Source, stdout, stderr io.Writer) error {
	m, k, n := a.Rows(), a.Cols(), b.Cols()
	chk := &check64{mode: newMulCheck(f.mode, m, k, n).mode, rng: rand.New(rand.NewPCG(1, 2))}
	full := chk.mode == validate.Full
	rows := panelRows64(m, k, n, full)
	if err := checkPanelMemory64(m, k, n, rows, full); err != nil {
		return err
	}
	ctx, stop := notifyInterrupt()
	defer stop()
	p := &panels64{ctx: ctx, f: f, a: a, b: b, rows: rows, chk: chk}
	p.r.M, p.r.K, p.r.N = m, k, n
	if bar := newBar(f.progress, stderr, "panels of C written"); bar != nil {
		defer bar.Finish()
		p.progress = func(done, total int) { bar.ChangeMax(total); bar.Set(done) }
	}
	err, abandoned := awaitWork(ctx, stderr, "glmul mul", func() error { return p.run(stdout, stderr) })
	if abandoned { // the work goroutine may still write p.r, and C's temporary file
		outfile.Abandon()
		return interruptedError{fmt.Sprintf("the float64 %d×%d×%d product did not stop within a second; %s", m, k, n, leftAs(f.out))}
	}
	r := p.r
	err = mulError(f, m, k, n, err)
	invalid := errors.Is(err, errNotValidated)
	if err != nil && !invalid {
		return err
	}
	noteReads(f, a, b, stderr)
	if err := writeMulReport(f, r, !invalid, stdout, stderr); err != nil {
		return err
	}
	if invalid {
		fmt.Fprintf(stderr, "glmul mul: %v; %s\n", r.Validation.Err(), leftAs(f.out))
		return errReported
	}
	return nil
}

// panels64 is a float64 product streamed by panels of rows of A and C.
type panels64 struct {
	ctx      context.Context
	f        *mulFlags
	a, b     matfile.Source
	rows     int                   // a panel's: panelRows64's
	chk      *check64              // each panel's check, and their worst
	progress func(done, total int) // nil: no bar
	dev      *glcompute.Device     // run's, once held
	r        mulResult             // the figures
}

// run checks that f.out can take C (outfile.CheckSized), opens the
// device (an OpenGL ES one fails here, before the files are read), then
// writes C to f.out as write computes it; the device is released on this
// goroutine, after the product.
func (p *panels64) run(stdout, stderr io.Writer) error {
	p.r.Validation = validate.Result{Mode: validate.None, OK: true, Row: -1, Col: -1}
	size := c64Bytes(p.f.out, p.r.M, p.r.N)
	if err := outfile.CheckSized(p.f.out, size); err != nil {
		return err
	}
	h, err := p.f.dev.hold(stderr, nil)
	if err != nil {
		return err
	}
	defer h.release()
	if err := probeFloat64(h.Device, p.f.kernel); err != nil {
		return err
	}
	p.dev, p.r.Device = h.Device, h.Info()
	return outfile.WriteSized(p.f.out, stdout, size, p.write)
}

// write reads B, then multiplies, checks and writes C panel by panel to
// w in f.out's format (stream.Mul64), stopping at the first error, at a
// panel that fails its check (errNotValidated: C is discarded, so the
// rest need not be computed, nor that panel written) or when ctx is
// done. An error leaves w incomplete, for outfile to discard.
func (p *panels64) write(w io.Writer) error {
	m, k, n := p.r.M, p.r.K, p.r.N
	sink, err := matfile.NewSink64(w, p.f.out, m, n)
	if err != nil {
		return err
	}
	t0 := time.Now()
	bm, _, err := matfile.Read64(p.b) // a .mtx B as parsed, not a copy of it: Mul64 borrows B
	if err != nil {
		return err
	}
	readB := time.Since(t0)
	// A failed check stops the product through its context, with
	// errNotValidated as the cause Mul64 returns.
	ctx, fail := context.WithCancelCause(p.ctx)
	defer fail(nil)
	check := func(b blas64.General) func(a, c blas64.General, r0 int) {
		return func(a, c blas64.General, r0 int) {
			if p.chk.panel(a, b, c, r0); p.chk.result().Err() != nil {
				fail(errNotValidated)
			}
		}
	}
	o := &stream.Options{Kernel: p.f.kernel, PanelBytes: 8 * int64(p.rows) * (int64(k) + int64(n)), Check64: check, Progress: p.progress, Context: ctx}
	r, err := stream.Mul64(p.dev, sink, rows64{p.a}, bm, o)
	p.r.Result, p.r.ReadB = r, readB
	if p.chk.checked {
		p.r.Validation = p.chk.result()
	}
	if err != nil {
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	p.r.Wall = time.Since(t0)
	return nil
}

// rows64 reads a matfile.Source as float64 (matfile.ReadRows64):
// stream.Mul64's A.
type rows64 struct{ matfile.Source }

func (s rows64) ReadRows(dst blas64.General, r0 int) error {
	return matfile.ReadRows64(s.Source, dst, r0)
}

// mulPanel64 multiplies a panel: Device.Mul64, a variable so that a test
// can make it wrong. stream.Mul64 multiplies each panel through
// streamhook.Mul64, which calls it.
var mulPanel64 = func(dev *glcompute.Device, c, a, b blas64.General, o *glcompute.MulOptions) (glcompute.Timings, error) {
	return dev.Mul64(c, a, b, o)
}

func init() {
	streamhook.Mul64 = func(dev any, c, a, b blas64.General, o any) (any, error) {
		return mulPanel64(dev.(*glcompute.Device), c, a, b, o.(*glcompute.MulOptions))
	}
}

// check64 checks a float64 product panel by panel, each as the product
// of A's panel by B (validate.Check64: its Freivalds vectors drawn anew
// for each panel from rng), and keeps the worst: validate has no float64
// check by rows of one product, as Panels is for float32.
type check64 struct {
	mode    validate.Mode // Full, Freivalds or None: newMulCheck's
	rng     *rand.Rand
	worst   validate.Result
	checked bool
	// Full's relative Frobenius error over the panels: each panel's
	// squared, weighted by its ‖C‖², which is the reference's to the
	// product's own error (the reference's own norm is validate's), and
	// the weights' sum.
	diff2, ref2 float64
}

// panel checks c, rows r0… of C, against a, the same rows of A, and b.
func (k *check64) panel(a, b, c blas64.General, r0 int) {
	if k.mode == validate.None || c.Rows == 0 {
		return
	}
	r := validate.Check64(k.mode, a, b, c, k.rng)
	if r.Row >= 0 {
		r.Row += r0
	}
	if k.mode == validate.Full {
		w := 1e-300 // a panel of zeros: next to no weight, none divided by zero
		for _, v := range c.Data[:c.Rows*c.Cols] {
			if v-v == 0 {
				w += v * v
			}
		}
		k.diff2 += r.RelFrobenius * r.RelFrobenius * w
		k.ref2 += w
	}
	ok := r.OK && (k.worst.OK || !k.checked)
	if !k.checked || r.WorstRatio > k.worst.WorstRatio || k.worst.Row < 0 && r.Row >= 0 {
		k.worst = r
	}
	k.worst.OK, k.checked = ok, true
}

// result is the worst panel's check so far: none where the mode is None
// or no panel was checked.
func (k *check64) result() validate.Result {
	if !k.checked {
		return validate.Result{Mode: k.mode, OK: true, Row: -1, Col: -1}
	}
	r := k.worst
	if k.mode == validate.Full {
		r.RelFrobenius = math.Sqrt(k.diff2 / k.ref2)
	}
	return r
}
