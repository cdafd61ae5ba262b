package glcompute

import (
	"cmp"
	"fmt"
	"time"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/shaders"
)

// Mul64 computes C = A·B in float64 on the GPU with the dfast kernel
// (MulOptions.Kernel: a shaders.LookupFloat64 spec; "" is "dfast"),
// overwriting C; A and B are not modified. It runs in one piece, not
// pipelined. Without float64 in shaders (OpenGL ES) it returns an error
// matching ErrUnsupported; a matrix over one storage binding or
// MaxGPUMemory, one matching ErrTooLarge (float64 panels are later work).
// SplitK and Measure are refused (docs/LIBRARY.md, "float64"). Empty
// products, the thread rule and panics are Mul's.
func (d *Device) Mul64(c, a, b blas64.General, opts *MulOptions) (Timings, error) {
	if checkProduct(dims64(c), dims64(a), dims64(b)) {
		d.emptyProduct(opts)
		if c.Rows > 0 && c.Cols > 0 { // K = 0: C = A·B is zero
			for i := range c.Rows {
				clear(c.Data[i*c.Stride : i*c.Stride+c.Cols])
			}
		}
		return Timings{}, nil
	}
	return d.product64(c, blas.NoTrans, a, blas.NoTrans, b, opts)
}

// plan64 is how one float64 product runs: its options with the defaults
// filled in, its kernel, the row strides A and B are uploaded with, and
// the slices its K runs in (a driver's loop limit; kSlices).
type plan64 struct {
	o              MulOptions
	kern           shaders.Kernel
	m, k, n        int
	lda, ldb       int
	slices, kRange int
}

// plan64 plans an m×k by k×n float64 product with opts; it makes no GL
// call.
func (d *Device) plan64(m, k, n int, opts *MulOptions) (pl plan64, err error) {
	d.mustBeOpen()
	if opts != nil {
		pl.o = *opts
	}
	pl.o.check()
	pl.m, pl.k, pl.n = m, k, n
	pl.o.MaxGroups = cmp.Or(pl.o.MaxGroups, DefaultMaxGroups)
	if err := d.float64Support(); err != nil {
		return pl, err
	}
	if pl.o.SplitK > 1 || pl.o.Measure != nil {
		return pl, fmt.Errorf("%w: float64 products run in one piece and take no MulOptions.SplitK or Measure yet; leave them zero", ErrUnsupported)
	}
	if err := d.checkMaxGroups(pl.o.MaxGroups); err != nil {
		return pl, err
	}
	if pl.kern, err = shaders.LookupFloat64(cmp.Or(pl.o.Kernel, "dfast")); err != nil {
		return pl, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if err := d.fits(pl.kern); err != nil {
		return pl, err
	}
	// A and B go up with row strides the kernel can read (even, for its
	// dvec2s), C comes back compact.
	pl.lda, pl.ldb = roundUp(k, pl.kern.Align), roundUp(n, pl.kern.Align)
	if err := d.fits64(&pl); err != nil {
		return pl, err
	}
	pl.slices = d.kSlices(pl.kern, k)
	pl.kRange = k
	if pl.slices > 1 {
		pl.kRange = d.maxKRange(pl.kern) / pl.kern.StepK * pl.kern.StepK
	}
	return pl, nil
}

// fits64 returns ErrTooLarge where A, B or C is over one storage binding
// (MaxBinding, the driver's limit, 2³² doubles) or the three over
// MaxGPUMemory: float64 products do not run in panels yet.
func (d *Device) fits64(pl *plan64) error {
	binding := d.info.MaxSSBOBlockSize
	if pl.o.MaxBinding > 0 {
		binding = min(binding, pl.o.MaxBinding)
	}
	binding = min(binding, 8*maxIndex)
	// float64: products of dimensions near 2³¹ overflow int64 in bytes.
	sizes := [3]float64{8 * float64(pl.m) * float64(pl.lda), 8 * float64(pl.k) * float64(pl.ldb), 8 * float64(pl.m) * float64(pl.n)}
	for i, what := range [3]string{"A", "B", "C"} {
		if sizes[i] > float64(binding) {
			rows, cols := [3]int{pl.m, pl.k, pl.m}[i], [3]int{pl.k, pl.n, pl.n}[i]
			return fmt.Errorf("%w: float64 %s is %d×%d, %s, over one shader storage binding (%s; MulOptions.MaxBinding or GL_MAX_SHADER_STORAGE_BLOCK_SIZE); float64 products do not run in panels yet: multiply in blocks of rows of A or columns of B",
				ErrTooLarge, what, rows, cols, formatBytes(sizes[i]), formatBytes(float64(binding)))
		}
	}
	if total := sizes[0] + sizes[1] + sizes[2]; pl.o.MaxGPUMemory > 0 && total > float64(pl.o.MaxGPUMemory) {
		return fmt.Errorf("%w: the float64 %d×%d by %d×%d product needs %s of GPU buffers, over MulOptions.MaxGPUMemory (%s); float64 products do not run in panels yet: multiply in blocks",
			ErrTooLarge, pl.m, pl.k, pl.k, pl.n, formatBytes(total), formatBytes(float64(pl.o.MaxGPUMemory)))
	}
	return nil
}

// product64 sets dst (m×n) to op(A)·op(B), A and B as stored, tA and tB
// saying whether each is transposed: A and B packed on the caller's
// goroutine, then uploaded, multiplied and read back on the device's.
func (d *Device) product64(dst blas64.General, tA blas.Transpose, a blas64.General, tB blas.Transpose, b blas64.General, opts *MulOptions) (Timings, error) {
	k := a.Cols
	if tA != blas.NoTrans {
		k = a.Rows
	}
	pl, err := d.plan64(dst.Rows, k, dst.Cols, opts)
	if err == nil {
		err = pl.o.stopped()
	}
	if err != nil {
		return Timings{}, err
	}
	start := time.Now()
	hostA, hostB := pack64(a, tA, pl.lda), pack64(b, tB, pl.ldb)
	var t Timings
	d.call(func() { t, err = d.run64(&pl, dst, hostA, hostB, start) })
	d.worked()
	return t, err
}

// pack64 returns op(x) as rows of ld doubles (ld at least its columns; a
// padding double is zero): x's own data where it is laid out so already.
func pack64(x blas64.General, t blas.Transpose, ld int) []float64 {
	if t == blas.NoTrans && x.Stride == ld && len(x.Data) >= x.Rows*ld {
		return x.Data[:x.Rows*ld]
	}
	if t == blas.NoTrans {
		out := make([]float64, x.Rows*ld)
		for i := range x.Rows {
			copy(out[i*ld:i*ld+x.Cols], x.Data[i*x.Stride:])
		}
		return out
	}
	out := make([]float64, x.Cols*ld) // op(x) is x.Cols × x.Rows
	const tile = 32                   // blocks that stay in cache both ways
	for i0 := 0; i0 < x.Rows; i0 += tile {
		for j0 := 0; j0 < x.Cols; j0 += tile {
			for i := i0; i < min(i0+tile, x.Rows); i++ {
				row := x.Data[i*x.Stride:]
				for j := j0; j < min(j0+tile, x.Cols); j++ {
					out[j*ld+i] = row[j]
				}
			}
		}
	}
	return out
}

// run64 uploads the packed A and B, runs the product over each slice of
// K and reads C back into dst, adding the slices up on the host. On the
// device thread.
func (d *Device) run64(pl *plan64, dst blas64.General, hostA, hostB []float64, start time.Time) (t Timings, err error) {
	d.clearErrors()
	p, err := d.programOf(pl.kern)
	if err != nil {
		return t, err
	}
	m, n := pl.m, pl.n
	g := &dgemm{d: d, p: p, m: m, k: pl.k, n: n, lda: pl.lda, ldb: pl.ldb, ldc: n, lenC: m * n}
	defer d.unbindAll()
	defer g.release()
	for _, u := range []struct {
		buf  *glw.Buffer
		data []float64
	}{{&g.bufA, hostA}, {&g.bufB, hostB}, {&g.bufC, nil}} {
		var ptr unsafe.Pointer
		size, usage := 8*len(u.data), uint32(glw.StaticDraw)
		if u.data != nil {
			ptr = unsafe.Pointer(&u.data[0])
		} else {
			size, usage = 8*g.lenC, glw.StaticRead
		}
		var ok bool
		if *u.buf, ok = glw.NewStorageBuffer(size, ptr, usage); !ok {
			return t, fmt.Errorf("%w: a float64 matrix of %s", ErrOutOfMemory, formatBytes(float64(size)))
		}
	}
	t.Upload = time.Since(start)
	t.UploadBytes = 8 * int64(len(hostA)+len(hostB))
	t.Kernel, t.Splits, t.Steps = pl.kern.Spec(), pl.slices, 1
	if plan, err := p.plan(m, n, pl.o.MaxGroups); err == nil {
		t.Groups = [2]int{plan.GroupsX, plan.GroupsY}
	}
	var compute time.Duration
	var sum []float64 // C so far, where K runs in slices
	for s := range pl.slices {
		if err := pl.o.stopped(); err != nil {
			return t, err
		}
		k0 := s * pl.kRange
		t0 := time.Now()
		nd, err := g.run(k0, min(pl.k-k0, pl.kRange), pl.o.MaxGroups)
		t.Dispatches += nd
		if err != nil {
			return t, err
		}
		glw.Finish()
		t1 := time.Now()
		compute += t1.Sub(t0)
		sum = g.readInto(dst, sum, s == 0, s == pl.slices-1)
		t.Readback += time.Since(t1)
		t.ReadbackBytes += 8 * int64(g.lenC)
	}
	d.runs64.Add(1)
	t.Compute = []time.Duration{compute}
	t.EndToEnd = time.Since(start)
	if pl.o.Progress != nil {
		pl.o.Progress(1, 1)
	}
	return t, nil
}

// readInto reads C back (compact, m×n) into dst: directly where dst is
// compact and the product ran in one slice, else through sum, the slices
// so far added up (first: none yet), copied into dst after the last.
func (g *dgemm) readInto(dst blas64.General, sum []float64, first, last bool) []float64 {
	m, n := g.m, g.n
	if first && last && dst.Stride == n {
		g.bufC.Read(0, 8*m*n, unsafe.Pointer(&dst.Data[0]))
		return nil
	}
	part := make([]float64, m*n)
	g.bufC.Read(0, 8*m*n, unsafe.Pointer(&part[0]))
	if first {
		sum = part
	} else {
		for i, v := range part {
			sum[i] += v
		}
	}
	if last {
		for i := range m {
			copy(dst.Data[i*dst.Stride:i*dst.Stride+n], sum[i*n:])
		}
	}
	return sum
}
