package glcompute

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/cause"
	"github.com/glmul/glmul/shaders"
)

// Float64 products with the dfast kernel (shaders.LookupFloat64): the
// dgemm that Mul64 and the tests run, and what the device offers.

// checkFloat64 reports whether the context's shaders have double:
// desktop OpenGL 4.0 on, or GL_ARB_gpu_shader_fp64; OpenGL ES never. On
// the device thread, once (initInfo keeps it in d.fp64).
func (d *Device) checkFloat64() error {
	if d.info.ES {
		return cause.Mark(fmt.Errorf("%w: OpenGL ES shaders have no float64 (double); float64 kernels need desktop OpenGL 4.0 or GL_ARB_gpu_shader_fp64", ErrUnsupported), cause.NoFloat64)
	}
	if d.zinkFault() {
		return fmt.Errorf("%w: %w", ErrUnsupported, errFloat64Refused)
	}
	if d.info.Major >= 4 || glw.HasExtension("GL_ARB_gpu_shader_fp64") {
		return nil
	}
	return fmt.Errorf("%w: %s lacks float64 in shaders (OpenGL 4.0 or GL_ARB_gpu_shader_fp64)", ErrUnsupported, d.info.api())
}

// errFloat64Refused is why a driver that offers float64 is refused it:
// Mesa's zink with its uniform inlining on gave every element of a dfast
// product wrong after a switch of compute programs (zink.go; docs/DRIVERS.md,
// "zink and float64").
var errFloat64Refused = errors.New("float64 products came out wrong on Mesa's zink with its uniform inlining on (docs/DRIVERS.md, \"zink and float64\"), so glmul runs none there; make the context with ZINK_INLINE_UNIFORMS unset or 0, or use llvmpipe or a GPU's own driver")

// float64Support returns nil where the device runs float64 kernels, else
// an error matching ErrUnsupported that says why. Any goroutine.
func (d *Device) float64Support() error { return d.fp64 }

// dgemm is one float64 product C = A·B on the GPU with a dfast kernel:
// its program and buffers, made once, then run and read back as often as
// wanted. Each matrix lies in a buffer of its own, after offA, offB or
// offC doubles, in rows of its own stride.
type dgemm struct {
	d                *Device
	p                *program
	m, k, n          int
	lda, ldb, ldc    int
	offA, offB, offC int
	bufA, bufB, bufC glw.Buffer
	lenC             int // doubles in bufC
}

// newDgemm makes the product c = a·b with the float64 kernel spec names:
// it compiles the kernel and uploads a, b and c, each after off doubles of
// NaN and as rows·stride doubles (a Data shorter than that padded with
// NaN); c's elements go up as they are, so that a poison shows what the
// kernel leaves. On the device thread. It panics if the shapes disagree.
func (d *Device) newDgemm(spec string, off int, c, a, b blas64.General) (*dgemm, error) {
	if a.Rows != c.Rows || b.Cols != c.Cols || a.Cols != b.Rows || a.Rows < 1 || a.Cols < 1 || b.Cols < 1 || off < 0 {
		panic("glcompute: dgemm: shapes of A, B and C disagree or are empty")
	}
	if a.Stride < a.Cols || b.Stride < b.Cols || c.Stride < c.Cols {
		panic("glcompute: dgemm: a row stride under its row's length")
	}
	if err := d.float64Support(); err != nil {
		return nil, err
	}
	k, err := shaders.LookupFloat64(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if (off|a.Stride|b.Stride)%k.Align != 0 {
		return nil, fmt.Errorf("%w: kernel %s reads A and B as dvec2s: their row strides (%d, %d) and offset (%d) must be even; use its _u configuration",
			ErrUnsupported, spec, a.Stride, b.Stride, off)
	}
	if err := d.texturesView64(k, 8*int64(off+a.Rows*a.Stride), 8*int64(off+b.Rows*b.Stride)); err != nil {
		return nil, err
	}
	p, err := d.programOf(k)
	if err != nil {
		return nil, err
	}
	g := &dgemm{d: d, p: p, m: c.Rows, k: a.Cols, n: c.Cols, lda: a.Stride, ldb: b.Stride, ldc: c.Stride, offA: off, offB: off, offC: off}
	for _, u := range []struct {
		buf *glw.Buffer
		m   blas64.General
	}{{&g.bufA, a}, {&g.bufB, b}, {&g.bufC, c}} {
		if *u.buf, err = d.float64Buffer(off, u.m); err != nil {
			g.release()
			return nil, err
		}
	}
	g.lenC = off + c.Rows*c.Stride
	return g, nil
}

// texturesView64 returns nil unless float64 kernel k reads through
// buffer textures (_tex) and one of its inputs, of these bytes, is more
// than a texture views (the driver's GL_MAX_TEXTURE_BUFFER_SIZE texels):
// then an error matching ErrUnsupported naming the configuration without
// _tex.
func (d *Device) texturesView64(k shaders.Kernel, bytes ...int64) error {
	if !k.Textures || slices.Max(bytes) <= d.texBlock {
		return nil
	}
	return fmt.Errorf("%w: kernel %s reads A and B through buffer textures, which view %d bytes on this driver, less than A or B (%d bytes); use it without _tex",
		ErrUnsupported, k.Spec(), d.texBlock, slices.Max(bytes))
}

// float64Buffer returns a storage buffer holding off NaNs, then m's
// rows·stride doubles (NaN past its Data).
func (d *Device) float64Buffer(off int, m blas64.General) (glw.Buffer, error) {
	data := make([]float64, off+m.Rows*m.Stride)
	copy(data[off:], m.Data)
	for i := range data {
		if i < off || i >= off+len(m.Data) {
			data[i] = math.NaN()
		}
	}
	if err := d.checkBlock("a float64 matrix", 8*int64(len(data))); err != nil {
		return 0, err
	}
	buf, ok := glw.NewStorageBuffer(8*len(data), unsafe.Pointer(&data[0]), glw.StaticDraw)
	if !ok {
		return 0, fmt.Errorf("%w: a float64 matrix of %d bytes", ErrOutOfMemory, 8*len(data))
	}
	return buf, nil
}

// run queues the product over K's columns k0 to k0+kk of A (rows of B)
// and a barrier for reading C back, and returns the dispatches it made.
// On the device thread.
func (g *dgemm) run(k0, kk, maxGroups int) (int, error) {
	g.d.clearErrors()
	g.p.prog.Use()
	g.d.bindStorage(g.p, 0, g.bufA, 0, 0) // buffer textures too, for _tex
	g.d.bindStorage(g.p, 1, g.bufB, 0, 0)
	g.bufC.BindStorage(2)
	g.p.setLayout(g.m, kk, g.n, g.lda, g.ldb, g.ldc, g.offA+k0, g.offB+k0*g.ldb, g.offC)
	n, err := g.p.dispatchTiles(g.m, g.n, maxGroups)
	if err != nil {
		return n, err
	}
	glw.BarrierBufferRead()
	return n, g.d.checkError("running the float64 kernel")
}

// read returns C's buffer whole: off doubles, then its rows·stride. On the
// device thread.
func (g *dgemm) read() []float64 {
	out := make([]float64, g.lenC)
	g.bufC.Read(0, 8*len(out), unsafe.Pointer(&out[0]))
	return out
}

func (g *dgemm) release() {
	g.d.detachTextures()
	g.bufA.Release()
	g.bufB.Release()
	g.bufC.Release()
}

// mulFloat64 runs c = a·b once with the float64 kernel spec names (see
// newDgemm) and returns C's buffer whole: off doubles, then c's
// rows·stride, each element the kernel did not write as it was.
func (d *Device) mulFloat64(spec string, off int, c, a, b blas64.General) ([]float64, error) {
	var out []float64
	var err error
	d.call(func() {
		var g *dgemm
		if g, err = d.newDgemm(spec, off, c, a, b); err != nil {
			return
		}
		defer g.release()
		if _, err = g.run(0, g.k, defaultMaxGroups); err == nil {
			out = g.read()
		}
	})
	return out, err
}
