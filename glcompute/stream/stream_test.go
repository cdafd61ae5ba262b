package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
	"github.com/glmul/glmul/validate"
)

// memReader reads rows of an in-memory matrix, failing at row failAt (-1:
// never) as a truncated file would.
type memReader struct {
	m      blas32.General
	failAt int
	calls  int
}

func (r *memReader) Rows() int { return r.m.Rows }
func (r *memReader) Cols() int { return r.m.Cols }
func (r *memReader) ReadRows(dst blas32.General, r0 int) error {
	r.calls++
	if dst.Cols != r.m.Cols || r0+dst.Rows > r.m.Rows {
		panic("memReader: bad block")
	}
	if r.failAt >= 0 && r0+dst.Rows > r.failAt {
		return errTruncated
	}
	for i := 0; i < dst.Rows; i++ {
		copy(dst.Data[i*dst.Stride:i*dst.Stride+dst.Cols], r.m.Data[(r0+i)*r.m.Stride:])
	}
	return nil
}

var errTruncated = errors.New("the file ended early")

// memWriter collects the rows written, failing after failAfter rows (-1:
// never).
type memWriter struct {
	rows      [][]float32
	failAfter int
	checked   func() int // if set: the rows checked, which a write must not pass
}

func (w *memWriter) WriteRows(m blas32.General) error {
	if w.checked != nil && len(w.rows)+m.Rows > w.checked() {
		return fmt.Errorf("rows %d to %d written before their check", len(w.rows), len(w.rows)+m.Rows-1)
	}
	if w.failAfter >= 0 && len(w.rows)+m.Rows > w.failAfter {
		return errors.New("disk full")
	}
	for i := 0; i < m.Rows; i++ {
		w.rows = append(w.rows, append([]float32(nil), m.Data[i*m.Stride:i*m.Stride+m.Cols]...))
	}
	return nil
}

// checkRecorder is an Options.Check that records what Mul
// hands it: B, and each panel's rows of A and C, which must be A's own
// rows, and C's with n columns, in order.
type checkRecorder struct {
	t       *testing.T
	a       blas32.General
	n       int
	b       blas32.General
	mu      sync.Mutex
	checked int // rows checked: a writer must not see more
}

func (cr *checkRecorder) prepare(b blas32.General) PanelCheck {
	cr.b = b
	return func(a, c blas32.General, r0 int) {
		cr.mu.Lock()
		defer cr.mu.Unlock()
		if r0 != cr.checked || a.Rows != c.Rows || a.Cols != cr.a.Cols || c.Cols != cr.n {
			cr.t.Errorf("check of rows %d… (%d×%d of A, %d×%d of C) after %d rows checked", r0, a.Rows, a.Cols, c.Rows, c.Cols, cr.checked)
		}
		for i := 0; i < a.Rows; i++ {
			for j := 0; j < a.Cols; j++ {
				if a.Data[i*a.Stride+j] != cr.a.Data[(r0+i)*cr.a.Stride+j] {
					cr.t.Fatalf("check of rows %d…: A[%d][%d] is not A's", r0, r0+i, j)
				}
			}
		}
		cr.checked += a.Rows
	}
}

// rows returns how many rows were checked.
func (cr *checkRecorder) rows() int {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.checked
}

// TestMulStream streams products whose panels straddle every boundary:
// one panel, a last panel of one row, k and n off multiples of 4
// (padding), one row, one column; each C against float64 with γ_K
// tolerances, every row written once, in order, each after its check.
func TestMulStream(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		m, k, n    int
		panelBytes int64
	}{
		{1, 1, 1, 0}, {70, 33, 17, 0}, {129, 5, 3, 4 * 64 * (8 + 4)}, {65, 64, 64, 4 * 64 * 128}, {300, 130, 1, 4 * 100 * (132 + 4)}, {7, 1, 300, 1},
	} {
		a, b := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng)
		cr := &checkRecorder{t: t, a: a, n: c.n}
		w := &memWriter{failAfter: -1, checked: cr.rows}
		r, err := Mul(d, w, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1},
			&Options{PanelBytes: c.panelBytes, Check: cr.prepare, Kernel: []string{"", "tiled32", "fast:64x64x8_4x4"}[c.m%3]})
		if err != nil {
			t.Fatalf("%d×%d×%d: %v", c.m, c.k, c.n, err)
		}
		if len(w.rows) != c.m || cr.rows() != c.m || cr.b.Rows != c.k || cr.b.Cols != c.n {
			t.Fatalf("%d×%d×%d: %d rows written, %d checked, B %d×%d checked", c.m, c.k, c.n, len(w.rows), cr.rows(), cr.b.Rows, cr.b.Cols)
		}
		for i := 0; i < c.k; i++ {
			for j := 0; j < c.n; j++ {
				if cr.b.Data[i*cr.b.Stride+j] != b.Data[i*b.Stride+j] {
					t.Fatalf("%d×%d×%d: the check's B[%d][%d] is not B's", c.m, c.k, c.n, i, j)
				}
			}
		}
		ref := cpu.Reference(a, b, false)
		mag := cpu.Reference(a, b, true)
		g := float64(c.k) * math.Ldexp(1, -24) * 1.01
		for i, row := range w.rows {
			for j, v := range row {
				if want := ref.Data[i*ref.Stride+j]; math.Abs(float64(v)-want) > g*mag.Data[i*mag.Stride+j]+1e-30 {
					t.Fatalf("%d×%d×%d in %d panels of %d: C[%d][%d] = %v, want %v", c.m, c.k, c.n, r.Panels, r.PanelRows, i, j, v, want)
				}
			}
		}
		if c.panelBytes > 0 && c.m > 64 && r.Panels < 2 {
			t.Errorf("%d×%d×%d: %d panel(s) of %d rows for %d panel bytes", c.m, c.k, c.n, r.Panels, r.PanelRows, c.panelBytes)
		}
	}
}

// TestMulStreamStops: a read error, a write error and a cancelled context
// each stop the product with that error, whatever stage it reached, and
// no row is written past the failure.
func TestMulStreamStops(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := cpu.Random(300, 40, rng), cpu.Random(40, 30, rng)
	o := &Options{PanelBytes: 4 * 64 * (40 + 32)} // 64-row panels: 5 of them
	_, err := Mul(d, &memWriter{failAfter: -1}, &memReader{m: a, failAt: 200}, &memReader{m: b, failAt: -1}, o)
	if !errors.Is(err, errTruncated) {
		t.Errorf("truncated A: %v", err)
	}
	w := &memWriter{failAfter: 100}
	if _, err := Mul(d, w, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, o); err == nil || len(w.rows) > 100 {
		t.Errorf("disk full after 100 rows: %v, %d rows written", err, len(w.rows))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o.Context = ctx
	if _, err := Mul(d, &memWriter{failAfter: -1}, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, o); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Mul(d, &memWriter{failAfter: -1}, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: 10}, nil); !errors.Is(err, errTruncated) {
		t.Errorf("truncated B: %v", err)
	}
}

// written returns the rows w received as one matrix of n columns.
func (w *memWriter) written(n int) blas32.General {
	c := blas32.General{Rows: len(w.rows), Cols: n, Stride: n, Data: make([]float32, len(w.rows)*n)}
	for i, row := range w.rows {
		copy(c.Data[i*n:], row)
	}
	return c
}

// streamChecked runs Mul of a by b with o and checks C against
// float64 (validate.CheckFull).
func streamChecked(t *testing.T, d *glcompute.Device, a, b blas32.General, o *Options) Result {
	t.Helper()
	w := &memWriter{failAfter: -1}
	r, err := Mul(d, w, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, o)
	if err != nil {
		t.Fatalf("%d×%d×%d: %v", a.Rows, a.Cols, b.Cols, err)
	}
	if len(w.rows) != a.Rows {
		t.Fatalf("%d×%d×%d: %d rows written", a.Rows, a.Cols, b.Cols, len(w.rows))
	}
	if res := validate.CheckFull(a, b, w.written(b.Cols)); res.Err() != nil {
		t.Fatalf("%d×%d×%d in %d panels of %d rows, B in %d column panels: %v", a.Rows, a.Cols, b.Cols, r.Panels, r.PanelRows, r.BPanels, res.Err())
	}
	return r
}

// TestMulStreamBPanels: a B over one storage binding (lowered by
// Options.MaxBinding) is held in column panels, each panel of A
// multiplied by each; a panel of A over it gets fewer rows.
func TestMulStreamBPanels(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		m, k, n            int
		binding            int64
		bpanels, panelRows int
	}{
		{70, 33, 300, 16 << 10, 6, 70},  // B in 56-column panels, the last one 20
		{130, 200, 90, 16 << 10, 5, 20}, // A's panels cut to 20 rows, B to 20 columns
		{65, 9, 1000, 8 << 10, 36, 65},  // the user's case in small: K 9 padded to 12
	} {
		a, b := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng)
		r := streamChecked(t, d, a, b, &Options{MaxBinding: c.binding, Kernel: []string{"", "tiled32", "fast:64x64x8_4x4"}[c.m%3]})
		if r.BPanels != c.bpanels || r.PanelRows != c.panelRows {
			t.Errorf("%d×%d×%d under %d bytes a binding: B in %d column panels, A in panels of %d rows; want %d and %d",
				c.m, c.k, c.n, c.binding, r.BPanels, r.PanelRows, c.bpanels, c.panelRows)
		}
	}
}

// TestMulStreamKPanels: a K whose row of A and 4 columns of B do not fit
// a binding (lowered by Options.MaxBinding) is cut into K panels
// whose products add up in C, B in column panels too where needed (it was
// refused); a binding that not even 4 rows of B fit is refused before
// anything is read, in the user's shapes.
func TestMulStreamKPanels(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		m, k, n                     int
		kpanels, bpanels, panelRows int
	}{
		{20, 3000, 10, 10, 1, 12},  // K in 320s, A's panels cut to 12 rows
		{70, 1100, 300, 18, 5, 64}, // K in 64s, B in 64-column panels
	} {
		a, b := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng)
		r := streamChecked(t, d, a, b, &Options{MaxBinding: 16 << 10, Kernel: []string{"", "tiled32", "fast:64x64x8_4x4"}[c.m%3]})
		if r.KPanels != c.kpanels || r.BPanels != c.bpanels || r.PanelRows != c.panelRows {
			t.Errorf("%d×%d×%d under 16 KiB a binding: K in %d panels, B in %d, A in panels of %d rows; want %d, %d and %d",
				c.m, c.k, c.n, r.KPanels, r.BPanels, r.PanelRows, c.kpanels, c.bpanels, c.panelRows)
		}
	}
	a, b := &memReader{m: cpu.Random(3, 1100, rng), failAt: -1}, &memReader{m: cpu.Random(1100, 5, rng), failAt: -1}
	_, err := Mul(d, &memWriter{failAfter: -1}, a, b, &Options{MaxBinding: 40})
	if !errors.Is(err, glcompute.ErrTooLarge) || !strings.Contains(err.Error(), "the 3×1100 by 1100×5 product") || a.calls+b.calls > 0 {
		t.Errorf("K = 1100 under 40 bytes a binding: %v after %d reads", err, a.calls+b.calls)
	}
}

// hashReader is a RowReader of seeded random elements, each a hash of
// its position and the seed: a large B that takes no memory of the
// test's own.
type hashReader struct {
	rows, cols int
	seed       uint64
}

func (r hashReader) Rows() int { return r.rows }
func (r hashReader) Cols() int { return r.cols }
func (r hashReader) ReadRows(dst blas32.General, r0 int) error {
	for i := range dst.Rows {
		for j := range dst.Cols {
			dst.Data[i*dst.Stride+j] = r.at(r0+i, j)
		}
	}
	return nil
}

// at is element (i, j), in [-1, 1) (splitmix64's finalizer).
func (r hashReader) at(i, j int) float32 {
	x := r.seed + uint64(i*r.cols+j+1)*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float32(x>>40)/(1<<23) - 1
}

// block returns columns [c0, c0+cols) of the matrix.
func (r hashReader) block(c0, cols int) blas32.General {
	m := cpu.New(r.rows, cols)
	for i := range r.rows {
		for j := range cols {
			m.Data[i*cols+j] = r.at(i, c0+j)
		}
	}
	return m
}

// TestMulStreamBOverBlock: a B over the driver's own storage block (A
// 8×1024 times B 1024×32772, 128 MiB and 16 KiB, on llvmpipe's 128 MiB)
// streams in column panels, C's columns on either side of the panels'
// edge and at both ends checked against float64; it was refused, after B
// was read. (2.5 to 6 s on llvmpipe here, two shared cores: most of it
// B's 128 MiB.)
func TestMulStreamBOverBlock(t *testing.T) {
	d := gltest.Open(t)
	if limit := d.Info().MaxSSBOBlockSize; limit != 128<<20 {
		t.Skipf("a storage block of %d MiB, not llvmpipe's 128", limit>>20)
	}
	a, b := cpu.Random(8, 1024, rand.New(rand.NewPCG(9, 9))), hashReader{1024, 32772, 9}
	w := &memWriter{failAfter: -1}
	r, err := Mul(d, w, &memReader{m: a, failAt: -1}, b, nil)
	if err != nil || r.BPanels != 2 {
		t.Fatalf("%v; B in %d column panels", err, r.BPanels)
	}
	c := w.written(b.cols)
	for _, c0 := range []int{0, 32768 - 100, b.cols - 100} {
		if res := validate.CheckFull(a, b.block(c0, 100), blockView(c, 0, c.Rows, c0, 100)); res.Err() != nil {
			t.Errorf("columns %d to %d of C: %v", c0, c0+99, res.Err())
		}
	}
}

// shapeReader is a RowReader of any claimed shape that reads nothing.
type shapeReader struct{ rows, cols int }

func (r shapeReader) Rows() int                                 { return r.rows }
func (r shapeReader) Cols() int                                 { return r.cols }
func (r shapeReader) ReadRows(dst blas32.General, r0 int) error { return errTruncated }

// TestMulStreamShapes: a negative dimension panics with the shapes named,
// as a mismatch does (it was a division by zero or a makeslice panic deep
// inside: a reviewer's finding). Empty products: TestMulStreamEmpty.
func TestMulStreamShapes(t *testing.T) {
	d := gltest.Open(t)
	for _, c := range []struct {
		a, b shapeReader
		want string
	}{
		{shapeReader{-3, 4}, shapeReader{4, 4}, "A is -3×4 and B 4×4: no dimension may be negative"},
		{shapeReader{4, 4}, shapeReader{4, -1}, "no dimension may be negative"},
		{shapeReader{4, 5}, shapeReader{4, 4}, "A is 4×5 and B 4×4: A's columns must equal B's rows"},
	} {
		conformance.MustPanic(t, c.want, func() { Mul(d, &memWriter{failAfter: -1}, c.a, c.b, nil) })
	}
}

// gateReader is a memReader whose read of row at (a panel's first row)
// tells reached and then waits for gate, at most a second.
type gateReader struct {
	memReader
	at      int
	reached chan struct{}
	gate    chan struct{}
}

func (r *gateReader) ReadRows(dst blas32.General, r0 int) error {
	if r0 == r.at {
		close(r.reached)
		select {
		case <-r.gate:
		case <-time.After(time.Second):
		}
	}
	return r.memReader.ReadRows(dst, r0)
}

// TestReleaseDuringMulStream: a Release while MulStream's GPU stage still
// has panels to go stops the product with glcompute.ErrReleased and returns once the
// stage has stopped; the stage panicked ("use of a released Device") on a
// goroutine of its own, which killed the process (a new user's audit).
func TestReleaseDuringMulStream(t *testing.T) {
	d := gltest.Open(t)
	rng := rand.New(rand.NewPCG(11, 12))
	a, b := cpu.Random(320, 16, rng), cpu.Random(16, 16, rng)
	r := &gateReader{memReader: memReader{m: a, failAt: -1}, at: 3 * 64, reached: make(chan struct{}), gate: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := Mul(d, &memWriter{failAfter: -1}, r, &memReader{m: b, failAt: -1}, &Options{PanelBytes: 4 * 64 * (16 + 16)})
		done <- err
	}()
	<-r.reached // panels 0 to 2 read: the GPU stage has panel 3 and 4 to go
	d.Release()
	close(r.gate)
	if err := <-done; !errors.Is(err, glcompute.ErrReleased) {
		t.Fatalf("MulStream with the Device released during it: %v, want glcompute.ErrReleased", err)
	}
	conformance.MustPanic(t, "use of a released Device", func() {
		Mul(d, &memWriter{failAfter: -1}, &memReader{m: a, failAt: -1}, &memReader{m: b, failAt: -1}, nil)
	})
}

// TestMulStreamBorrowed: MulStream on a borrowed Device panics on the
// caller's goroutine, before reading anything. Its GPU stage, on a
// goroutine of its own where the host's context is not current, panicked
// there, which killed the process.
func TestMulStreamBorrowed(t *testing.T) {
	gltest.Borrowed(t, func(d *glcompute.Device) {
		rng := rand.New(rand.NewPCG(15, 16))
		a, b := cpu.Random(8, 4, rng), cpu.Random(4, 4, rng)
		ra := &memReader{m: a, failAt: -1}
		conformance.MustPanic(t, "owns its context", func() { Mul(d, &memWriter{failAfter: -1}, ra, &memReader{m: b, failAt: -1}, nil) })
		if ra.calls != 0 {
			t.Errorf("A read %d times before the panic", ra.calls)
		}
	})
}

// TestMulEmpty: k = 0 writes C's zeros in panels, reading nothing
// (the readers fail if read) and checking nothing; m or n = 0 writes
// nothing. It panicked ("every dimension must be at least 1").
func TestMulEmpty(t *testing.T) {
	d := gltest.Open(t)
	for _, s := range [][3]int{{300, 0, 5}, {0, 4, 4}, {4, 4, 0}, {0, 0, 0}} {
		m, k, n := s[0], s[1], s[2]
		w := &memWriter{failAfter: -1}
		var progress, checks int
		r, err := Mul(d, w, shapeReader{m, k}, shapeReader{k, n}, &Options{
			PanelBytes: 4 * 64 * 8, Progress: func(done, total int) { progress = done },
			Check: func(blas32.General) PanelCheck { checks++; return nil }})
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		want := 0
		if k == 0 && m > 0 && n > 0 {
			want = m
		}
		if len(w.rows) != want || r.M != m || r.K != k || r.N != n || checks != 0 || progress != r.Panels {
			t.Fatalf("%v: %d rows written, want %d; result %+v, %d checks, progress %d", s, len(w.rows), want, r, checks, progress)
		}
		for i, row := range w.rows {
			if len(row) != n {
				t.Fatalf("%v: row %d has %d columns", s, i, len(row))
			}
			for j, v := range row {
				if v != 0 {
					t.Fatalf("%v: C[%d][%d] = %v", s, i, j, v)
				}
			}
		}
		if k == 0 && m > 0 && n > 0 && r.Panels < 2 {
			t.Errorf("%v: %d panels", s, r.Panels)
		}
	}
}

// TestMulZeroDevice: Mul on a Device not made by Open panics, as every
// method of one does.
func TestMulZeroDevice(t *testing.T) {
	var zero glcompute.Device
	conformance.MustPanic(t, "not made by Open or NewDeviceFromCurrent", func() {
		Mul(&zero, &memWriter{failAfter: -1}, shapeReader{2, 2}, shapeReader{2, 2}, nil)
	})
}
