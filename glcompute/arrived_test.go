package glcompute

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/conformance"
)

// arrivals records MulOptions.Arrived's calls: each block's values as
// they were when it was called, how often each element of C was in a
// block, and the calls to Arrived and Progress in order.
type arrivals struct {
	m, n   int
	at     func(i, j int) float64 // C's element, read at the call
	blocks []arrivedBlock
	cover  []int
	events []byte // 'a' an Arrived call, 'p' a Progress call
}

type arrivedBlock struct {
	r0, c0, rows, cols int
	values             []float64
}

func (ar *arrivals) options(o MulOptions) *MulOptions {
	ar.cover = make([]int, ar.m*ar.n)
	o.Arrived = func(r0, c0, rows, cols int) {
		ar.events = append(ar.events, 'a')
		blk := arrivedBlock{r0: r0, c0: c0, rows: rows, cols: cols}
		for i := r0; i < r0+rows; i++ {
			for j := c0; j < c0+cols; j++ {
				blk.values = append(blk.values, ar.at(i, j))
				ar.cover[i*ar.n+j]++
			}
		}
		ar.blocks = append(ar.blocks, blk)
	}
	o.Progress = func(done, total int) { ar.events = append(ar.events, 'p') }
	return &o
}

// check reports blocks that do not tile C once, that changed after their
// call, or an Arrived call not followed by its step's Progress call.
func (ar *arrivals) check(t *testing.T, steps int) {
	t.Helper()
	if len(ar.blocks) < min(2, steps) {
		t.Fatalf("%d blocks arrived in %d steps; the case should have several", len(ar.blocks), steps)
	}
	for e, n := range ar.cover {
		if n != 1 {
			t.Fatalf("C[%d][%d] arrived in %d blocks, want 1", e/ar.n, e%ar.n, n)
		}
	}
	ar.unchanged(t)
	for i, e := range ar.events {
		if e == 'a' && (i+1 == len(ar.events) || ar.events[i+1] != 'p') {
			t.Fatalf("calls %q: an Arrived call not followed by its step's Progress", ar.events)
		}
	}
	if p := countByte(ar.events, 'p'); p != steps {
		t.Fatalf("%d Progress calls for %d steps", p, steps)
	}
}

// unchanged fails t where an element of a named block no longer holds
// the value it held when its block was named.
func (ar *arrivals) unchanged(t *testing.T) {
	t.Helper()
	for _, blk := range ar.blocks {
		v := blk.values
		for i := blk.r0; i < blk.r0+blk.rows; i++ {
			for j := blk.c0; j < blk.c0+blk.cols; j++ {
				if got := ar.at(i, j); math.Float64bits(got) != math.Float64bits(v[0]) {
					t.Fatalf("C[%d][%d] was %v when its block (rows %d+%d, columns %d+%d) was named, %v after Mul", i, j, v[0], blk.r0, blk.rows, blk.c0, blk.cols, got)
				}
				v = v[1:]
			}
		}
	}
}

func countByte(s []byte, c byte) (n int) {
	for _, b := range s {
		if b == c {
			n++
		}
	}
	return n
}

// TestArrivedBlocksAreFinal: Arrived names blocks that tile C once, each
// holding its final values when called, before its step's Progress call:
// in bands, in panels with K whole and cut, A kept and streamed, a
// streamed pass, and float64 in bands and panels.
func TestArrivedBlocksAreFinal(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(21, 22))
	const kern, kern64 = "fast:64x64x8_4x4", "dfast:32x32x4_4x2"
	for _, c := range []struct {
		m, k, n  int
		o        MulOptions
		streamed bool
		mapped   bool // A, B and C host matrices: the GPU copies C into host memory itself
	}{
		{300, 20, 70, MulOptions{Kernel: kern}, false, false},
		{300, 20, 70, MulOptions{Kernel: kern}, false, true},
		{130, 300, 150, MulOptions{Kernel: kern, MaxBinding: 32 << 10}, false, false},
		{130, 3000, 150, MulOptions{Kernel: kern, MaxBinding: 64 << 10}, false, false},
		{130, 3000, 150, MulOptions{Kernel: kern, MaxBinding: 64 << 10, MaxGPUMemory: 1 << 20}, false, false},
		{4*64 + 37, 301, 203, MulOptions{Kernel: "fast:64x64x8_8x4_db_at", SplitK: 1}, true, false},
		{4*64 + 37, 301, 203, MulOptions{Kernel: "fast:64x64x8_8x4_db_at", SplitK: 1}, true, true},
	} {
		t.Run(fmt.Sprintf("float32/%d×%d×%d/binding=%d/memory=%d/%s/mapped=%v", c.m, c.k, c.n, c.o.MaxBinding, c.o.MaxGPUMemory, c.o.Kernel, c.mapped), func(t *testing.T) {
			if c.streamed {
				if d.tuning().Fits(c.o.Kernel) != nil {
					t.Skipf("%s does not fit %s", c.o.Kernel, d.Info().Renderer)
				}
				streamAnyBands = true
				defer func() { streamAnyBands = false }()
			}
			a, b, cm := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng), cpu.New(c.m, c.n)
			if c.mapped {
				a, b, cm = hostCopy(t, d, a), hostCopy(t, d, b), hostCopy(t, d, cm)
			}
			ar := &arrivals{m: c.m, n: c.n, at: func(i, j int) float64 { return float64(cm.Data[i*cm.Stride+j]) }}
			tm, err := d.Mul(cm, a, b, ar.options(c.o))
			if err != nil {
				t.Fatal(err)
			}
			if tm.Streamed != c.streamed {
				t.Fatalf("streamed %v, want %v (%s)", tm.Streamed, c.streamed, tm.Panels)
			}
			ar.check(t, tm.Steps)
		})
	}
	for _, c := range []struct {
		m, k, n int
		o       MulOptions
	}{
		{300, 77, 130, MulOptions{Kernel: kern64}},
		{300, 77, 310, MulOptions{Kernel: kern64, MaxBinding: 64 << 10}},
		{130, 3000, 150, MulOptions{Kernel: kern64, MaxBinding: 64 << 10}},
	} {
		t.Run(fmt.Sprintf("float64/%d×%d×%d/binding=%d", c.m, c.k, c.n, c.o.MaxBinding), func(t *testing.T) {
			needFloat64(t, d)
			a, b, cm := conformance.Random64(c.m, c.k, c.k, rng), conformance.Random64(c.k, c.n, c.n, rng), conformance.Random64(c.m, c.n, c.n, rng)
			ar := &arrivals{m: c.m, n: c.n, at: func(i, j int) float64 { return cm.Data[i*cm.Stride+j] }}
			tm, err := d.Mul64(cm, a, b, ar.options(c.o))
			if err != nil {
				t.Fatal(err)
			}
			ar.check(t, tm.Steps)
		})
	}
}

// hostCopy returns g copied into a host matrix of d's, released when the
// test ends.
func hostCopy(t *testing.T, d *Device, g blas32.General) blas32.General {
	t.Helper()
	h, err := d.newHostMatrix(g.Rows, g.Cols)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Release)
	for r := range g.Rows {
		copy(h.Data[r*h.Stride:r*h.Stride+g.Cols], g.Data[r*g.Stride:r*g.Stride+g.Cols])
	}
	return h.General
}

// TestArrivedUntilStopped: a pass that its Context stops names only the
// blocks that landed before it stopped, each holding what it held when
// named.
func TestArrivedUntilStopped(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(23, 24))
	a, b, cm := cpu.Random(1000, 20, rng), cpu.Random(20, 70, rng), cpu.New(1000, 70)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ar := &arrivals{m: 1000, n: 70, at: func(i, j int) float64 { return float64(cm.Data[i*cm.Stride+j]) }}
	o := ar.options(MulOptions{Kernel: "fast:64x64x8_4x4", Context: ctx}) // in bands, a block each
	progress := o.Progress
	o.Progress = func(done, total int) {
		progress(done, total)
		if done == 2 {
			cancel()
		}
	}
	if _, err := d.Mul(cm, a, b, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("Mul stopped after two steps: %v, want context.Canceled", err)
	}
	if len(ar.blocks) == 0 || len(ar.blocks) > 3 {
		t.Fatalf("%d blocks named; want those of the steps before the stop", len(ar.blocks))
	}
	ar.unchanged(t)
}

// TestHostMatrixCWithTimerBusy: a product into a pinned matrix's C returns C
// written while a timer query of the caller's runs, so that the pass
// reads no timestamps back. On zink a kernel's writes into mapped memory
// arrived after the fence and glFinish (lateMappedWrites; docs/DRIVERS.md):
// without the copy there, C's first element was still 0 in 10 of 20 runs.
// The streamed pass, whose compute passes copy C into the matrix, too.
func TestHostMatrixCWithTimerBusy(t *testing.T) {
	d := openDevice(t, BackendEGL)
	var q glw.Query
	d.call(func() { q = glw.NewQuery(); q.BeginTimeElapsed() })
	defer d.call(func() { glw.EndTimeElapsed(); q.Release() })
	rng := rand.New(rand.NewPCG(25, 26))
	defer func() { streamAnyBands = false }()
	for _, c := range []struct {
		m, k, n  int
		o        MulOptions
		streamed bool // the streamed pass, whose compute passes copy C's bands into the matrix
	}{
		{300, 20, 70, MulOptions{Kernel: "fast:64x64x8_4x4"}, false},
		{4*64 + 37, 301, 203, MulOptions{Kernel: "fast:64x64x8_8x4_db_at", SplitK: 1}, true},
	} {
		if c.streamed {
			if d.tuning().Fits(c.o.Kernel) != nil {
				continue
			}
			streamAnyBands = true
		}
		for range 20 {
			a, b := cpu.Random(c.m, c.k, rng), cpu.Random(c.k, c.n, rng)
			want := cpu.Reference(a, b, false)
			cm := hostCopy(t, d, cpu.New(c.m, c.n))
			for i := range cm.Data {
				cm.Data[i] = -7
			}
			tm, err := d.Mul(cm, hostCopy(t, d, a), hostCopy(t, d, b), &c.o)
			if err != nil || tm.Streamed != c.streamed {
				t.Fatalf("%d×%d×%d: streamed %v, want %v (%v)", c.m, c.k, c.n, tm.Streamed, c.streamed, err)
			}
			for i := range c.m {
				for j := range c.n {
					g, w := float64(cm.Data[i*cm.Stride+j]), want.Data[i*want.Stride+j]
					if math.Abs(g-w) > 1e-4*(1+math.Abs(w)) {
						t.Fatalf("%d×%d×%d: C[%d][%d] = %v when Mul returned, want %v", c.m, c.k, c.n, i, j, g, w)
					}
				}
			}
		}
		streamAnyBands = false
	}
}
