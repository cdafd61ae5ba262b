package glcompute

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/conformance"
)

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// deviceRunner runs Gemm cases on d with the arena's buffers made and read
// through the library (NewMatrix, Upload, Download).
func deviceRunner(d *Device) conformance.GemmRunner {
	return func(bufs [][]float32, g conformance.GemmCase) error {
		return withArena(d, bufs, func(holders []*Matrix, read func(int) error) error {
			return runViews(d, holders, bufs, g, read)
		})
	}
}

// withArena puts each buffer of an arena in a Matrix of its own and runs
// f with them and a function that reads buffer i back into bufs[i]; the
// matrices are released afterwards.
func withArena(d *Device, bufs [][]float32, f func(holders []*Matrix, read func(i int) error) error) error {
	row := func(b []float32) blas32.General {
		return blas32.General{Rows: 1, Cols: len(b), Stride: len(b), Data: b}
	}
	var holders []*Matrix
	defer func() {
		for _, h := range holders {
			h.Release()
		}
	}()
	for _, b := range bufs {
		h, err := d.NewMatrix(1, len(b))
		if err != nil {
			return err
		}
		holders = append(holders, h)
		if err := h.Upload(row(b)); err != nil {
			return err
		}
	}
	return f(holders, func(i int) error { return holders[i].Download(row(bufs[i])) })
}

// runViews wraps the case's views in the holders' buffers, runs the Gemm
// and reads every buffer back with read.
func runViews(d *Device, holders []*Matrix, bufs [][]float32, g conformance.GemmCase, read func(int) error) error {
	wrap := func(v conformance.View) (*Matrix, error) {
		return d.WrapBuffer(holders[v.Buf].Buffer(), v.Off, v.Rows, v.Cols, v.Stride)
	}
	a, err := wrap(g.A)
	if err != nil {
		return err
	}
	defer a.Release()
	b, err := wrap(g.B)
	if err != nil {
		return err
	}
	defer b.Release()
	c, err := wrap(g.C)
	if err != nil {
		return err
	}
	defer c.Release()
	if err := c.Gemm(trans(g.TransA), trans(g.TransB), g.Alpha, a, b, g.Beta); err != nil {
		return err
	}
	for i := range bufs {
		if err := read(i); err != nil {
			return err
		}
	}
	return nil
}

// engineRunner runs Gemm cases on a borrowed d with the arena's buffers
// made, filled and read back by the host with its own GL calls, as an
// engine would.
func engineRunner(d *Device) conformance.GemmRunner {
	return func(bufs [][]float32, g conformance.GemmCase) error {
		var bound int32 // the engine keeps its own generic binding
		gl.GetIntegerv(gl.SHADER_STORAGE_BUFFER_BINDING, &bound)
		defer gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, uint32(bound))
		names := make([]uint32, len(bufs))
		gl.GenBuffers(int32(len(names)), &names[0])
		defer gl.DeleteBuffers(int32(len(names)), &names[0])
		holders := make([]*Matrix, len(bufs))
		for i, b := range bufs {
			gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, names[i])
			gl.BufferData(gl.SHADER_STORAGE_BUFFER, 4*len(b), unsafe.Pointer(&b[0]), gl.DYNAMIC_DRAW)
			h, err := d.WrapBuffer(names[i], 0, 1, len(b), len(b))
			if err != nil {
				return err
			}
			defer h.Release()
			holders[i] = h
		}
		gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, 0)
		return runViews(d, holders, bufs, g, func(i int) error {
			gl.MemoryBarrier(gl.BUFFER_UPDATE_BARRIER_BIT)
			gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, names[i])
			gl.GetBufferSubData(gl.SHADER_STORAGE_BUFFER, 0, 4*len(bufs[i]), unsafe.Pointer(&bufs[i][0]))
			gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, 0)
			return nil
		})
	}
}

// hostEGL makes a fresh host context current on the calling thread,
// locked to it, as an engine's (headless EGL; GLFW's WGL on Windows,
// newTestHost), with go-gl loaded for the test's own GL calls through
// hostProc; the returned function releases it.
func hostEGL(t *testing.T) (release func()) {
	t.Helper()
	runtime.LockOSThread()
	if runtime.GOOS != "windows" {
		t.Setenv("DISPLAY", "")
	}
	getProc, free, err := newTestHost()
	if err != nil {
		runtime.UnlockOSThread()
		noGL(t, err.Error())
	}
	hostProc = getProc
	release = func() {
		free()
		runtime.UnlockOSThread()
	}
	if err := gl.InitWithProcAddrFunc(getProc); err != nil {
		release()
		t.Fatal(err)
	}
	return release
}

// hostProc loads GL functions for the context hostEGL made current.
var hostProc func(string) unsafe.Pointer

// withBorrowedEGL runs f with a fresh host EGL context current (hostEGL)
// and a Device borrowing it.
func withBorrowedEGL(t *testing.T, f func(d *Device)) {
	t.Helper()
	defer hostEGL(t)()
	d, err := NewDeviceFromCurrent(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	f(d)
}

// uploadViewRunner runs Gemm cases on a borrowed d in host-made buffers
// whose matrices are written through their own wrapped views with Upload
// (row by row where the strides differ) and read back with Download before
// the product, as issue 8's engine did.
func uploadViewRunner(d *Device) conformance.GemmRunner {
	return func(bufs [][]float32, g conformance.GemmCase) error {
		names := make([]uint32, len(bufs))
		gl.GenBuffers(int32(len(names)), &names[0])
		defer gl.DeleteBuffers(int32(len(names)), &names[0])
		for i, b := range bufs {
			gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, names[i])
			gl.BufferData(gl.SHADER_STORAGE_BUFFER, 4*len(b), unsafe.Pointer(&b[0]), gl.DYNAMIC_DRAW)
		}
		gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, 0)
		var mats [3]*Matrix
		for x, v := range []conformance.View{g.A, g.B, g.C} {
			m, err := d.WrapBuffer(names[v.Buf], v.Off, v.Rows, v.Cols, v.Stride)
			if err != nil {
				return err
			}
			defer m.Release()
			c := cpu.New(v.Rows, v.Cols)
			for i := 0; i < v.Rows; i++ {
				copy(c.Data[i*v.Cols:], bufs[v.Buf][v.Off+i*v.Stride:v.Off+i*v.Stride+v.Cols])
			}
			back := cpu.New(v.Rows, v.Cols)
			if err := m.Upload(c); err != nil {
				return err
			}
			if err := m.Download(back); err != nil {
				return err
			}
			for i := range c.Data {
				if c.Data[i] != back.Data[i] && c.Data[i] == c.Data[i] {
					return fmt.Errorf("Download after Upload: element %d = %v, want %v", i, back.Data[i], c.Data[i])
				}
			}
			mats[x] = m
		}
		if err := mats[2].Gemm(trans(g.TransA), trans(g.TransB), g.Alpha, mats[0], mats[1], g.Beta); err != nil {
			return err
		}
		for i := range bufs {
			gl.MemoryBarrier(gl.BUFFER_UPDATE_BARRIER_BIT)
			gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, names[i])
			gl.GetBufferSubData(gl.SHADER_STORAGE_BUFFER, 0, 4*len(bufs[i]), unsafe.Pointer(&bufs[i][0]))
			gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, 0)
		}
		return nil
	}
}

// TestGemmConformance runs the whole Gemm table on an owned context and on
// a borrowed one with an engine's state bound and the engine's own
// buffers, checking every float of every buffer.
func TestGemmConformance(t *testing.T) {
	cases := conformance.GemmCases()
	for _, backend := range []Backend{BackendEGL, BackendGLES} {
		t.Run("owned/"+string(backend), func(t *testing.T) {
			d := openDevice(t, backend)
			for _, g := range cases {
				if err := conformance.CheckGemm(g, 1, deviceRunner(d)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	t.Run("borrowed", func(t *testing.T) {
		withBorrowedEGL(t, func(d *Device) {
			setUpEngine(t)
			before := readEngineState()
			for _, g := range cases {
				if err := conformance.CheckGemm(g, 2, engineRunner(d)); err != nil {
					t.Error(err)
				}
			}
			if after := readEngineState(); after != before {
				t.Errorf("the engine's GL state changed:\n before %+v\n after  %+v", before, after)
			}
		})
	})
}

// TestIssue8EngineCases are the two products reported wrong on NVIDIA
// (issue 8), each the first product of a fresh borrowed context: α = 0 on
// A, B and C in one engine buffer with gaps (must read neither A nor B,
// which are NaN), and AᵀA from a matrix at an odd offset with a wider
// stride, filled through Upload (must not write A).
func TestIssue8EngineCases(t *testing.T) {
	for _, g := range conformance.GemmCases() {
		first := g.Name == "37x29x53/one-buffer" && !g.TransA && !g.TransB && g.Alpha == 0 && g.Beta == 0.25
		second := g.Name == "45x19/AᵀA" && g.Beta == 0
		if !first && !second {
			continue
		}
		for _, engineState := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/engine-state=%v", g, engineState), func(t *testing.T) {
				withBorrowedEGL(t, func(d *Device) {
					if engineState {
						setUpEngine(t)
					}
					if err := conformance.CheckGemm(g, 8, uploadViewRunner(d)); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

// batchRunner runs batch cases on d with the arena in buffers the Device
// made, read back whole.
func batchRunner(d *Device) conformance.BatchRunner {
	return func(bufs [][]float32, c conformance.BatchCase) error {
		return withArena(d, bufs, func(holders []*Matrix, read func(int) error) error {
			at := func(v conformance.View) *Matrix {
				m, err := d.WrapBuffer(holders[v.Buf].Buffer(), v.Off, 1, 1, 1)
				if err != nil {
					panic(err)
				}
				return m
			}
			bt := Batch{Count: c.Count, M: c.M, K: c.K, N: c.N, StrideA: c.StrideA, StrideB: c.StrideB, StrideC: c.StrideC,
				LdA: c.LdA, LdB: c.LdB, LdC: c.LdC}
			if err := d.GemmBatched(at(c.C), c.Alpha, at(c.A), at(c.B), c.Beta, bt); err != nil {
				return err
			}
			for i := range holders {
				if err := read(i); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

func TestGemmBatchedConformance(t *testing.T) {
	for _, backend := range []Backend{BackendEGL, BackendGLES} {
		t.Run(string(backend), func(t *testing.T) {
			d := openDevice(t, backend)
			for _, c := range conformance.BatchCases() {
				if err := conformance.CheckBatch(c, 1, batchRunner(d)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// newMatrix is NewMatrix for a test: it fails the test on an error and
// releases the matrix when the test ends.
func newMatrix(t *testing.T, d *Device, rows, cols int) *Matrix {
	t.Helper()
	m, err := d.NewMatrix(rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

func TestBatchRefusesBadStrides(t *testing.T) {
	d := openDevice(t, BackendEGL)
	buf, other := newMatrix(t, d, 1, 4096), newMatrix(t, d, 1, 4096)
	a, _ := d.WrapBuffer(buf.Buffer(), 0, 1, 1, 1)
	c, _ := d.WrapBuffer(other.Buffer(), 0, 1, 1, 1)
	cInA, _ := d.WrapBuffer(buf.Buffer(), 10, 1, 1, 1)
	ok := Batch{Count: 4, M: 3, K: 3, N: 3}
	for name, x := range map[string]struct {
		bt   Batch
		c    *Matrix
		want string
	}{
		"negative-StrideC": {Batch{Count: 4, M: 3, K: 3, N: 3, StrideC: -16}, c, "negative stride"},
		"negative-LdA":     {Batch{Count: 4, M: 3, K: 3, N: 3, LdA: -1}, c, "negative stride"},
		"LdA-below-K":      {Batch{Count: 4, M: 3, K: 3, N: 3, LdA: 2}, c, "row stride below"},
		"C-products-overlap": {Batch{Count: 4, M: 3, K: 3, N: 3, StrideC: 8}, c,
			"products would overlap"},
		"size-33":      {Batch{Count: 1, M: 33, K: 1, N: 1}, c, "sizes 1…32"},
		"C-overlaps-A": {ok, cInA, "C overlaps A or B"},
	} {
		t.Run(name, func(t *testing.T) {
			conformance.MustPanic(t, x.want, func() { d.GemmBatched(x.c, 1, a, a, 0, x.bt) })
		})
	}
	far, _ := d.WrapBuffer(other.Buffer(), 4000, 1, 1, 1)
	conformance.MustPanic(t, "past the end of its buffer", func() { d.MulBatched(far, a, a, Batch{Count: 100, M: 3, K: 3, N: 3}) })
}

// TestUploadDownloadTouchOnlyElements checks that Upload into a strided
// view writes its elements and nothing else of the buffer, and Download
// writes dst's elements and leaves dst's stride gaps alone.
func TestUploadDownloadTouchOnlyElements(t *testing.T) {
	openDevice(t, BackendEGL)              // skips or fails here without GL
	for _, staging := range []int{0, 16} { // 16 bytes: rows over it go direct
		t.Run(fmt.Sprintf("staging=%d", staging), func(t *testing.T) {
			d, err := Open(&Options{Backend: onPlatform(BackendEGL), StagingBytes: staging})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			uploadDownloadTouchOnlyElements(t, d)
		})
	}
}

func uploadDownloadTouchOnlyElements(t *testing.T, d *Device) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, s := range []struct{ rows, cols, stride, off, srcStride int }{
		{5, 3, 7, 2, 7}, {5, 3, 7, 2, 3}, {4, 4, 4, 9, 6}, {1, 6, 6, 3, 6}, {6, 1, 5, 0, 5},
	} {
		t.Run(fmt.Sprintf("%+v", s), func(t *testing.T) {
			whole := conformance.RandomPadded(1, s.off+(s.rows-1)*s.stride+s.cols+5, 0, rng)
			holder := resident(t, d, whole, 0)
			v, err := d.WrapBuffer(holder.Buffer(), s.off, s.rows, s.cols, s.stride)
			if err != nil {
				t.Fatal(err)
			}
			src := conformance.RandomPadded(s.rows, s.cols, s.srcStride-s.cols, rng)
			if err := v.Upload(src); err != nil {
				t.Fatal(err)
			}
			want := append([]float32(nil), whole.Data...)
			for i := 0; i < s.rows; i++ {
				copy(want[s.off+i*s.stride:], src.Data[i*src.Stride:i*src.Stride+s.cols])
			}
			got := cpu.New(1, len(want))
			holder.Download(got)
			for i := range want {
				if got.Data[i] != want[i] {
					t.Fatalf("buffer float %d = %v after Upload, want %v", i, got.Data[i], want[i])
				}
			}
			dst := conformance.RandomPadded(s.rows, s.cols, 2, rng)
			dst0 := append([]float32(nil), dst.Data...)
			if err := v.Download(dst); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < s.rows; i++ {
				for j := 0; j < dst.Stride; j++ {
					g, w := dst.Data[i*dst.Stride+j], dst0[i*dst.Stride+j]
					if j < s.cols {
						w = src.Data[i*src.Stride+j]
					}
					if g != w {
						t.Fatalf("dst[%d][%d] = %v after Download, want %v", i, j, g, w)
					}
				}
			}
		})
	}
}

// TestWrapBeyondOneBlock wraps small matrices inside a buffer larger than
// GL_MAX_SHADER_STORAGE_BLOCK_SIZE, at unaligned offsets near its start
// and its end, and runs Gemm, the fast path and a batch on them.
func TestWrapBeyondOneBlock(t *testing.T) {
	d := openDevice(t, BackendEGL)
	floats := int(d.Info().MaxSSBOBlockSize/4) + 1<<16
	var name uint32
	var err error
	d.call(func() {
		var b glw.Buffer
		b, err = d.newBuffer(4*floats, nil, glw.StaticDraw, "test buffer")
		name = uint32(b)
	})
	if err != nil {
		t.Skipf("cannot allocate a buffer over one block: %v", err)
	}
	defer d.call(func() { b := glw.Buffer(name); b.Release() })
	rng := rand.New(rand.NewPCG(91, 92))
	for _, base := range []int{5, floats/2 + 3, floats - 200} {
		a, b, c0 := conformance.RandomPadded(4, 4, 0, rng), conformance.RandomPadded(4, 4, 0, rng), conformance.RandomPadded(4, 4, 0, rng)
		wrap := func(off int, m blas32.General) *Matrix {
			w, err := d.WrapBuffer(name, off, 4, 4, 4)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Upload(m); err != nil {
				t.Fatal(err)
			}
			return w
		}
		ga, gb, gc := wrap(base, a), wrap(base+17, b), wrap(base+40, c0)
		for _, op := range []string{"gemm", "fast", "batched"} {
			var err error
			switch op {
			case "gemm":
				err = gc.Gemm(blas.NoTrans, blas.NoTrans, 1, ga, gb, 0.5)
			case "fast":
				aligned := wrap(base+40-(base+40)%4, c0) // vec4-aligned: the fast kernel
				err = aligned.Mul(ga, gb)
				gc = aligned
			case "batched":
				err = d.MulBatched(gc, ga, gb, Batch{Count: 1, M: 4, K: 4, N: 4})
			}
			if err != nil {
				t.Fatalf("base %d %s: %v", base, op, err)
			}
			got := cpu.New(4, 4)
			gc.Download(got)
			beta := float32(0)
			if op == "gemm" {
				beta = 0.5
			}
			ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, a, b, beta, c0)
			for i := range ref {
				if e := abs64(float64(got.Data[i]) - ref[i]); !(e <= bound[i]) && e != 0 {
					t.Fatalf("base %d %s: C[%d] = %v, want %v", base, op, i, got.Data[i], ref[i])
				}
			}
			gc.Upload(c0)
		}
	}
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
