package stream

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
)

// rowSource64 is a RowReader64 of an in-memory matrix; before, if set, is
// called ahead of each read of rows [r0, r0+rows) and its error is the
// read's (a file that ends early, a read that waits).
type rowSource64 struct {
	m      blas64.General
	before func(r0, rows int) error
	calls  atomic.Int32
}

func (r *rowSource64) Rows() int { return r.m.Rows }
func (r *rowSource64) Cols() int { return r.m.Cols }
func (r *rowSource64) ReadRows(dst blas64.General, r0 int) error {
	r.calls.Add(1)
	if dst.Cols != r.m.Cols || r0+dst.Rows > r.m.Rows {
		panic("rowSource64: bad block")
	}
	if r.before != nil {
		if err := r.before(r0, dst.Rows); err != nil {
			return err
		}
	}
	for i := range dst.Rows {
		copy(dst.Data[i*dst.Stride:i*dst.Stride+dst.Cols], r.m.Data[(r0+i)*r.m.Stride:])
	}
	return nil
}

// truncatedAt is a rowSource64's before that fails every read past row
// at, as a file that ends there does.
func truncatedAt(at int) func(r0, rows int) error {
	return func(r0, rows int) error {
		if r0+rows > at {
			return errTruncated
		}
		return nil
	}
}

// rowSink64 collects the rows written as one matrix of n columns; limit,
// if set, is how many rows it takes before a write fails (disk full), and
// checked, if set, the rows checked so far, which a write must not pass.
type rowSink64 struct {
	n       int
	c       []float64
	limit   int
	checked func() int
}

func (w *rowSink64) rows() int { return len(w.c) / w.n }

func (w *rowSink64) WriteRows(m blas64.General) error {
	if m.Cols != w.n {
		panic("rowSink64: bad block")
	}
	if w.checked != nil && w.rows()+m.Rows > w.checked() {
		return errors.New("rows written before their check")
	}
	if w.limit > 0 && w.rows()+m.Rows > w.limit {
		return errors.New("disk full")
	}
	for i := range m.Rows {
		w.c = append(w.c, m.Data[i*m.Stride:i*m.Stride+m.Cols]...)
	}
	return nil
}

// panelBytes64 is Options.PanelBytes for Mul64 panels of rows rows of an
// m×k by k×n product.
func panelBytes64(rows, k, n int) int64 { return 8 * int64(rows) * int64(k+n) }

// TestMul64Stream streams float64 products whose panels straddle every
// boundary: one panel (a 1×1×1 product, a panel larger than A), whole
// panels only, a last panel of one row, more panels than are in flight,
// one column, K = 1. A and B are seeded random at row strides with NaN
// padding (read, it would show in C), B lent as it is. Each C is within
// conformance.MulRef64's bound of the float64 reference, every row
// written once, in order, each after its check, which sees A's own rows
// and B as lent; A and B are unchanged, bit for bit; the Result counts
// the panels and their memory and names the kernel that ran.
func TestMul64Stream(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		m, k, n, rows int // rows: a panel's (0: Options.PanelBytes' zero value)
		panels        int
	}{
		{1, 1, 1, 0, 1}, {7, 1, 30, 8, 1}, {16, 33, 7, 8, 2}, {17, 9, 5, 8, 3},
		{15, 3, 1, 4, 4}, {9, 130, 3, 1, 9}, {200, 70, 65, 64, 4},
	} {
		a, b := conformance.Random64(c.m, c.k, c.k+3, rng), conformance.Random64(c.k, c.n, c.n+1, rng)
		a0, b0 := slices.Clone(a.Data), slices.Clone(b.Data)
		var checked atomic.Int64 // rows checked, which the writer reads
		w := &rowSink64{n: c.n, checked: func() int { return int(checked.Load()) }}
		var progress []int
		o := &Options{Progress: func(done, total int) { progress = append(progress, done, total) },
			Check64: func(bc blas64.General) func(ac, cc blas64.General, r0 int) {
				if &bc.Data[0] != &b.Data[0] || bc.Rows != c.k || bc.Cols != c.n {
					t.Errorf("%v: the check's B is not B as lent", c)
				}
				return func(ac, cc blas64.General, r0 int) {
					if int64(r0) != checked.Load() || ac.Rows != cc.Rows || ac.Cols != c.k || cc.Cols != c.n {
						t.Errorf("%v: check of rows %d… (%d×%d of A, %d×%d of C) after %d rows checked", c, r0, ac.Rows, ac.Cols, cc.Rows, cc.Cols, checked.Load())
					}
					for i := range ac.Rows {
						if !slices.Equal(ac.Data[i*ac.Stride:i*ac.Stride+c.k], a.Data[(r0+i)*a.Stride:(r0+i)*a.Stride+c.k]) {
							t.Errorf("%v: the check's row %d of A is not A's", c, r0+i)
						}
					}
					checked.Add(int64(ac.Rows))
				}
			}}
		if c.rows > 0 {
			o.PanelBytes = panelBytes64(c.rows, c.k, c.n)
		}
		r, err := Mul64(d, w, &rowSource64{m: a}, b, o)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if w.rows() != c.m || checked.Load() != int64(c.m) || len(progress) != 2*c.panels || progress[len(progress)-2] != c.panels {
			t.Fatalf("%v: %d rows written, %d checked; progress %v", c, w.rows(), checked.Load(), progress)
		}
		rows := c.m // the zero value's panel: 64 MiB, all of A here
		if c.rows > 0 {
			rows = min(c.rows, c.m)
		}
		if r.Panels != c.panels || r.PanelRows != rows || r.HostBytes != 8*int64(c.k*c.n+min(3, c.panels)*rows*(c.k+c.n)) ||
			!strings.HasPrefix(r.Kernel, "dfast") || r.M != c.m || r.K != c.k || r.N != c.n || r.ReadB != 0 {
			t.Errorf("%v: result %+v", c, r)
		}
		checkC64(t, c, a, b, w.c)
		if !sameBits(a.Data, a0) || !sameBits(b.Data, b0) {
			t.Errorf("%v: A or B changed", c)
		}
	}
}

// checkC64 compares c, compact, with a·b within conformance.MulRef64's
// bound, reporting the first few elements outside it.
func checkC64(t *testing.T, what any, a, b blas64.General, c []float64) {
	t.Helper()
	want, bound := conformance.MulRef64(a, b)
	if len(c) != len(want) {
		t.Fatalf("%v: C has %d elements, want %d", what, len(c), len(want))
	}
	bad := 0
	for e, v := range c {
		if !(math.Abs(v-want[e]) <= bound[e]) {
			if bad++; bad <= 3 {
				t.Errorf("%v: C[%d][%d] = %v, want %v ± %.3g", what, e/b.Cols, e%b.Cols, v, want[e], bound[e])
			}
		}
	}
	if bad > 3 {
		t.Errorf("%v: %d elements of %d wrong", what, bad, len(c))
	}
}

// sameBits reports whether x and y hold the same float64s, bit for bit
// (NaN padding included).
func sameBits(x, y []float64) bool {
	return slices.EqualFunc(x, y, func(u, v float64) bool { return math.Float64bits(u) == math.Float64bits(v) })
}

// TestMul64StreamStops: A's read failing midway, C's write failing, a
// context cancelled before the start, and a check that cancels it at a
// panel (as glmul mul -type f64 does at one that fails) each stop the
// product with their error, no row written past the failure; the failed
// check's own panel is not written, those written are right.
func TestMul64StreamStops(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(23, 24))
	a, b := conformance.Random64(300, 40, 40, rng), conformance.Random64(40, 30, 30, rng)
	o := func() *Options { return &Options{PanelBytes: panelBytes64(64, 40, 30)} } // 5 panels, the last of 44 rows
	w := &rowSink64{n: 30}
	if _, err := Mul64(d, w, &rowSource64{m: a, before: truncatedAt(200)}, b, o()); !errors.Is(err, errTruncated) || w.rows() > 192 {
		t.Errorf("A ending at row 200: %v, %d rows written", err, w.rows())
	}
	w = &rowSink64{n: 30, limit: 100}
	if _, err := Mul64(d, w, &rowSource64{m: a}, b, o()); err == nil || !strings.Contains(err.Error(), "disk full") || w.rows() > 100 {
		t.Errorf("disk full after 100 rows: %v, %d rows written", err, w.rows())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	oc := o()
	oc.Context = ctx
	if _, err := Mul64(d, &rowSink64{n: 30}, &rowSource64{m: a}, b, oc); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	errFailed := errors.New("C failed validation")
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	oc = o()
	oc.Context = ctx
	oc.Check64 = func(blas64.General) func(a, c blas64.General, r0 int) {
		return func(a, c blas64.General, r0 int) {
			if r0 == 128 {
				stop(errFailed)
			}
		}
	}
	// The first panel was written before the third was checked (the
	// second waited for the writer to take it); the second may be. The
	// GPU's busy time is above zero; the others may read 0 where the
	// clock is coarse (under Wine a 64-row read and this check take less
	// than its tick).
	w = &rowSink64{n: 30}
	r, err := Mul64(d, w, &rowSource64{m: a}, b, oc)
	if !errors.Is(err, errFailed) || w.rows() != 64 && w.rows() != 128 || r.Check < 0 || r.GPU <= 0 || r.Read < 0 || r.Write < 0 {
		t.Fatalf("a check failing the third panel: %v, %d rows written (want 64 or 128), busy %v %v %v %v", err, w.rows(), r.Read, r.GPU, r.Check, r.Write)
	}
	checkC64(t, "the panels before the failed one", blockView(a, 0, w.rows(), 0, 40), b, w.c)
}

// TestMul64StreamEmpty: K = 0 writes C's zeros by panels, reading nothing
// and checking nothing; M or N = 0 writes nothing; none runs a kernel.
func TestMul64StreamEmpty(t *testing.T) {
	d := gltest.Open(t)
	for _, s := range [][3]int{{300, 0, 5}, {0, 4, 4}, {4, 4, 0}} {
		m, k, n := s[0], s[1], s[2]
		a := &rowSource64{m: blas64.General{Rows: m, Cols: k, Stride: max(k, 1)}, before: truncatedAt(-1)}
		b := blas64.General{Rows: k, Cols: n, Stride: max(n, 1), Data: make([]float64, k*n)}
		w := &rowSink64{n: max(n, 1)}
		checks := 0
		r, err := Mul64(d, w, a, b, &Options{PanelBytes: 8 * 64 * 8, Check64: func(blas64.General) func(a, c blas64.General, r0 int) { checks++; return nil }})
		want := 0
		if k == 0 {
			want = m * n
		}
		if err != nil || len(w.c) != want || a.calls.Load() != 0 || checks != 0 || r.Kernel != "" || slices.ContainsFunc(w.c, func(v float64) bool { return v != 0 }) {
			t.Errorf("%v: %v; %d elements written, want %d zeros; %d reads, %d checks, kernel %q", s, err, len(w.c), want, a.calls.Load(), checks, r.Kernel)
		}
		if k == 0 && r.Panels < 2 {
			t.Errorf("%v: %d panels", s, r.Panels)
		}
	}
}

// TestMul64StreamPanics: what Mul64 takes as a programmer's error panics
// on the caller's goroutine, with the shapes named, before A is read.
func TestMul64StreamPanics(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(25, 26))
	a := &rowSource64{m: conformance.Random64(4, 5, 5, rng)}
	b := conformance.Random64(5, 3, 3, rng)
	for want, f := range map[string]func(){
		"A is 4×5 and B 4×3: A's columns must equal B's rows": func() {
			Mul64(d, &rowSink64{n: 3}, a, conformance.Random64(4, 3, 3, rng), nil)
		},
		"B's Stride or Data do not hold its Rows×Cols": func() {
			Mul64(d, &rowSink64{n: 3}, a, blas64.General{Rows: 5, Cols: 3, Stride: 3, Data: b.Data[:14]}, nil)
		},
		"Options.Check checks Mul's float32 panels: set Check64": func() {
			Mul64(d, &rowSink64{n: 3}, a, b, &Options{Check: func(blas32.General) PanelCheck { return nil }})
		},
		"Options.MaxBinding is negative": func() { Mul64(d, &rowSink64{n: 3}, a, b, &Options{MaxBinding: -1}) },
	} {
		conformance.MustPanic(t, want, f)
	}
	if n := a.calls.Load(); n != 0 {
		t.Errorf("A read %d times", n)
	}
}

// TestReleaseDuringMul64Stream: a Release while Mul64's GPU stage still
// has panels to go stops the product with glcompute.ErrReleased and
// returns once the stage has stopped, as for Mul: its Device.Mul64 calls
// would panic on a released Device, on a goroutine of their own.
func TestReleaseDuringMul64Stream(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(27, 28))
	a, b := conformance.Random64(320, 16, 16, rng), conformance.Random64(16, 16, 16, rng)
	reached, gate := make(chan struct{}), make(chan struct{})
	src := &rowSource64{m: a, before: func(r0, rows int) error {
		if r0 == 3*64 { // panels 0 to 2 read: the GPU stage has panels 3 and 4 to go
			close(reached)
			select {
			case <-gate:
			case <-time.After(time.Second):
			}
		}
		return nil
	}}
	done := make(chan error, 1)
	go func() {
		_, err := Mul64(d, &rowSink64{n: 16}, src, b, &Options{PanelBytes: panelBytes64(64, 16, 16)})
		done <- err
	}()
	<-reached
	d.Release()
	close(gate)
	if err := <-done; !errors.Is(err, glcompute.ErrReleased) {
		t.Fatalf("Mul64 with the Device released during it: %v, want glcompute.ErrReleased", err)
	}
}
