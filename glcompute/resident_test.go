package glcompute

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute/internal/glfwctx"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/shaders"
)

// resident uploads m into a new buffer holding it at element offset off
// (the buffer is larger than the matrix, as an engine's would be).
func resident(t *testing.T, d *Device, m blas32.General, off int) *Matrix {
	t.Helper()
	holder, err := d.NewMatrix(1, off+m.Rows*m.Stride+7)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Release)
	w, err := d.WrapBuffer(holder.Buffer(), off, m.Rows, m.Cols, m.Stride)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Upload(m); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestMulBatchedEverySize(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(21, 22))
	for size := 1; size <= 32; size++ {
		for _, dims := range [][3]int{{size, size, size}, {size, max(1, 33-size), (size*7)%32 + 1}} {
			bt := Batch{Count: 37, M: dims[0], K: dims[1], N: dims[2]}
			t.Run(fmt.Sprintf("%dx%dx%d", bt.M, bt.K, bt.N), func(t *testing.T) {
				a := conformance.RandomPadded(1, bt.Count*bt.M*bt.K, 0, rng)
				b := conformance.RandomPadded(1, bt.Count*bt.K*bt.N, 0, rng)
				ga, gb := resident(t, d, a, 3), resident(t, d, b, 0)
				gc, err := d.NewMatrix(1, bt.Count*bt.M*bt.N)
				if err != nil {
					t.Fatal(err)
				}
				defer gc.Release()
				if err := d.MulBatched(gc, ga, gb, bt); err != nil {
					t.Fatal(err)
				}
				got := cpu.New(1, bt.Count*bt.M*bt.N)
				if err := gc.Download(got); err != nil {
					t.Fatal(err)
				}
				for p := 0; p < bt.Count; p++ {
					am := blas32.General{Rows: bt.M, Cols: bt.K, Stride: bt.K, Data: a.Data[p*bt.M*bt.K:]}
					bm := blas32.General{Rows: bt.K, Cols: bt.N, Stride: bt.N, Data: b.Data[p*bt.K*bt.N:]}
					cm := blas32.General{Rows: bt.M, Cols: bt.N, Stride: bt.N, Data: make([]float32, bt.M*bt.N)}
					ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, am, bm, 0, cm)
					for i := range ref {
						g := float64(got.Data[p*bt.M*bt.N+i])
						if e := math.Abs(g - ref[i]); !(e <= bound[i]) && e != 0 {
							t.Fatalf("product %d element %d: %v, want %v ± %.3g", p, i, g, ref[i], bound[i])
						}
					}
				}
			})
		}
	}
}

// engineState is what a host has bound; borrowed calls must leave it as is.
type engineState struct {
	program, vao, arrayBuffer, ssbo int32
	copyRead, copyWrite             int32
	indexed                         [4][3]int64
	activeTexture                   int32
	texBuffers                      [3]int32 // buffer textures at units 0–2
}

func readEngineState() engineState {
	var s engineState
	gl.GetIntegerv(gl.CURRENT_PROGRAM, &s.program)
	gl.GetIntegerv(gl.VERTEX_ARRAY_BINDING, &s.vao)
	gl.GetIntegerv(gl.ARRAY_BUFFER_BINDING, &s.arrayBuffer)
	gl.GetIntegerv(gl.SHADER_STORAGE_BUFFER_BINDING, &s.ssbo)
	gl.GetIntegerv(gl.COPY_READ_BUFFER_BINDING, &s.copyRead)
	gl.GetIntegerv(gl.COPY_WRITE_BUFFER_BINDING, &s.copyWrite)
	for i := range s.indexed {
		var b int32
		gl.GetIntegeri_v(gl.SHADER_STORAGE_BUFFER_BINDING, uint32(i), &b)
		s.indexed[i][0] = int64(b)
		gl.GetInteger64i_v(gl.SHADER_STORAGE_BUFFER_START, uint32(i), &s.indexed[i][1])
		gl.GetInteger64i_v(gl.SHADER_STORAGE_BUFFER_SIZE, uint32(i), &s.indexed[i][2])
	}
	gl.GetIntegerv(gl.ACTIVE_TEXTURE, &s.activeTexture)
	for i := range s.texBuffers {
		gl.ActiveTexture(gl.TEXTURE0 + uint32(i))
		gl.GetIntegerv(gl.TEXTURE_BINDING_BUFFER, &s.texBuffers[i])
	}
	gl.ActiveTexture(uint32(s.activeTexture))
	return s
}

// setUpEngine binds what a game engine would have bound mid-frame: its own
// program, a VAO and an array buffer, SSBO ranges at 0–3 and a generic one,
// buffers at both copy targets, buffer textures at units 0–2 and unit 2
// active.
// It returns the engine's particle buffer (256 floats).
func setUpEngine(t *testing.T) uint32 {
	t.Helper()
	const src = "#version 430 core\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer P { float p[]; };\nvoid main() { p[0] += 1.0; }\n\x00"
	sh := gl.CreateShader(gl.COMPUTE_SHADER)
	cs, free := gl.Strs(src)
	gl.ShaderSource(sh, 1, cs, nil)
	free()
	gl.CompileShader(sh)
	prog := gl.CreateProgram()
	gl.AttachShader(prog, sh)
	gl.LinkProgram(prog)
	gl.UseProgram(prog)
	var vao, bufs [5]uint32
	gl.GenVertexArrays(1, &vao[0])
	gl.BindVertexArray(vao[0])
	gl.GenBuffers(5, &bufs[0])
	data := make([]float32, 256)
	for i := range data {
		data[i] = float32(i)
	}
	for _, b := range bufs {
		gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, b)
		gl.BufferData(gl.SHADER_STORAGE_BUFFER, 4*len(data), unsafe.Pointer(&data[0]), gl.DYNAMIC_DRAW)
	}
	gl.BindBuffer(gl.ARRAY_BUFFER, bufs[4])
	for i := 0; i < 4; i++ {
		gl.BindBufferRange(gl.SHADER_STORAGE_BUFFER, uint32(i), bufs[i], 64*i, 256)
	}
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, bufs[3])
	gl.BindBuffer(gl.COPY_READ_BUFFER, bufs[1])
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, bufs[2])
	var texs [3]uint32
	gl.GenTextures(3, &texs[0])
	for i, tex := range texs {
		gl.ActiveTexture(gl.TEXTURE0 + uint32(i))
		gl.BindTexture(gl.TEXTURE_BUFFER, tex)
		gl.TexBuffer(gl.TEXTURE_BUFFER, gl.R32F, bufs[i])
	}
	if e := gl.GetError(); e != gl.NO_ERROR {
		t.Fatalf("engine set-up: GL error 0x%x", e)
	}
	return bufs[0]
}

// exerciseBorrowed runs every resident operation on a borrowed Device and
// checks the engine's state after each, and the results. A kernel spec
// other than "" replaces the device's choice for every product.
func exerciseBorrowed(t *testing.T, kernel string) {
	particles := setUpEngine(t)
	before := readEngineState()
	d, err := NewDeviceFromCurrent(nil)
	if err != nil {
		t.Fatal(err)
	}
	if kernel != "" {
		d.info.DefaultKernel, d.info.SmallGridKernel, d.info.ClassKernels = kernel, "", nil
	}
	check := func(step string) {
		t.Helper()
		if after := readEngineState(); after != before {
			t.Fatalf("after %s the engine's GL state changed:\n before %+v\n after  %+v", step, before, after)
		}
	}
	check("NewDeviceFromCurrent")
	if d.Info().Backend != BackendBorrowed {
		t.Fatalf("backend %q", d.Info().Backend)
	}
	rng := rand.New(rand.NewPCG(31, 32))
	a, b := cpu.Random(40, 30, rng), cpu.Random(30, 20, rng)
	ga, _ := d.NewMatrix(40, 30)
	gb, _ := d.NewMatrix(30, 20)
	gc, err := d.NewMatrix(40, 20)
	if err != nil {
		t.Fatal(err)
	}
	check("NewMatrix")
	ga.Upload(a)
	gb.Upload(b)
	check("Upload")
	if err := gc.Mul(ga, gb); err != nil {
		t.Fatal(err)
	}
	check("Mul")
	// Rows of multiples of 4 floats: the device's fast kernel (or kernel),
	// alone, inside a Scope, and on host matrices.
	a4, b4 := cpu.Random(36, 32, rng), cpu.Random(32, 20, rng)
	newMatrix := func(m blas32.General) *Matrix {
		g, err := d.NewMatrix(m.Rows, m.Cols)
		if err == nil {
			err = g.Upload(m)
		}
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ga4, gb4, gc4 := newMatrix(a4), newMatrix(b4), newMatrix(cpu.New(36, 20))
	check("NewMatrix of rows of multiples of 4")
	if err := gc4.Mul(ga4, gb4); err != nil {
		t.Fatal(err)
	}
	check("Mul on the fast path")
	if err := d.Scope(func() error { return errors.Join(gc4.Mul(ga4, gb4), gc4.Mul(ga4, gb4)) }); err != nil {
		t.Fatal(err)
	}
	check("Scope")
	host := cpu.New(36, 20)
	if _, err := d.Mul(host, a4, b4, &MulOptions{Kernel: kernel}); err != nil {
		t.Fatal(err)
	}
	check("Mul of host matrices")
	got4 := cpu.New(36, 20)
	gc4.Download(got4)
	for _, m := range []blas32.General{got4, host} {
		ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, a4, b4, 0, m)
		for i := range ref {
			if e := math.Abs(float64(m.Data[i]) - ref[i]); !(e <= bound[i]) && e != 0 {
				t.Fatalf("borrowed fast-path Mul: C[%d] = %v, want %v", i, m.Data[i], ref[i])
			}
		}
	}
	for _, m := range []*Matrix{ga4, gb4, gc4} {
		m.Release()
	}
	f := d.Fence()
	if !f.Wait(10 * time.Second) {
		t.Fatal("fence did not pass in 10 s")
	}
	f.Release()
	check("Fence")
	got := cpu.New(40, 20)
	gc.Download(got)
	check("Download")
	ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, a, b, 0, got)
	for i := range ref {
		if e := math.Abs(float64(got.Data[i]) - ref[i]); !(e <= bound[i]) && e != 0 {
			t.Fatalf("borrowed Mul: C[%d] = %v, want %v", i, got.Data[i], ref[i])
		}
	}

	// The engine's own particle buffer, used in place: 4 products of 4×4
	// transforms at float 16 onward, written to floats 128 onward.
	in, err := d.WrapBuffer(particles, 16, 1, 64, 64)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := d.WrapBuffer(particles, 128, 1, 64, 64)
	if err := d.MulBatched(out, in, in, Batch{Count: 4, M: 4, K: 4, N: 4}); err != nil {
		t.Fatal(err)
	}
	check("MulBatched on the engine's buffer")
	gl.Finish()
	back := make([]float32, 256)
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, particles)
	gl.GetBufferSubData(gl.SHADER_STORAGE_BUFFER, 0, 4*256, unsafe.Pointer(&back[0]))
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, uint32(before.ssbo))
	for p := 0; p < 4; p++ {
		for i := 0; i < 4; i++ {
			for j := 0; j < 4; j++ {
				var s float32
				for k := 0; k < 4; k++ {
					s += float32(16+p*16+i*4+k) * float32(16+p*16+k*4+j)
				}
				if g := back[128+p*16+i*4+j]; g != s {
					t.Fatalf("engine buffer product %d (%d,%d) = %v, want %v", p, i, j, g, s)
				}
			}
		}
	}
	for _, m := range []*Matrix{ga, gb, gc, in, out} {
		m.Release()
	}
	d.Release()
	check("Release")
	if e := gl.GetError(); e != gl.NO_ERROR {
		t.Fatalf("GL error 0x%x left for the engine", e)
	}
}

func TestBorrowedEGL(t *testing.T) {
	defer hostEGL(t)()
	// Not subtests: the host's context is current on this thread only.
	for _, kernel := range []string{"", "cpu", "fast:64x64x8_4x4"} {
		t.Logf("kernel %q", kernel)
		exerciseBorrowed(t, kernel)
	}
}

func TestBorrowedGLFW(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if runtime.GOOS != "windows" {
		if xvfbDisplay == "" {
			noGL(t, "no Xvfb display")
		}
		t.Setenv("DISPLAY", xvfbDisplay)
	}
	c, err := glfwctx.NewContext(4, 3)
	if err != nil {
		noGL(t, err.Error())
	}
	defer c.Release()
	if err := gl.InitWithProcAddrFunc(glfwctx.GetProcAddress); err != nil {
		t.Fatal(err)
	}
	exerciseBorrowed(t, "")
}

func TestNewDeviceFromCurrentWithoutContext(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	openDevice(t, BackendEGL) // a GL driver exists; this thread has no context
	if _, err := NewDeviceFromCurrent(nil); err == nil {
		t.Fatal("no error without a current context")
	}
}

// TestResidentMulFastPath runs Matrix.Mul where the fast kernel applies
// (compact, rows of a multiple of 4 floats, offsets on vec4 boundaries, in
// a larger buffer) and where it must not (a stride gap the fast kernel
// would overwrite), checking the results and that the gap is untouched.
func TestResidentMulFastPath(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(51, 52))
	for _, s := range [][3]int{{132, 68, 260}, {7, 4, 8}} {
		m, k, n := s[0], s[1], s[2]
		for _, pad := range []int{0, 4} {
			a, b := conformance.RandomPadded(m, k, 0, rng), conformance.RandomPadded(k, n, 0, rng)
			c0 := conformance.RandomPadded(m, n, pad, rng) // the gap holds values that must survive
			ga, gb, gc := resident(t, d, a, 8), resident(t, d, b, 4), resident(t, d, c0, 12)
			// C's rows including their gaps (Upload writes only Cols of each).
			whole, err := d.WrapBuffer(gc.Buffer(), gc.Offset, m, n+pad, n+pad)
			if err != nil {
				t.Fatal(err)
			}
			whole.Upload(blas32.General{Rows: m, Cols: n + pad, Stride: n + pad, Data: c0.Data})
			if err := gc.Mul(ga, gb); err != nil {
				t.Fatal(err)
			}
			got := blas32.General{Rows: m, Cols: n + pad, Stride: n + pad, Data: make([]float32, m*(n+pad))}
			whole.Download(got)
			ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, a, b, 0, blas32.General{Rows: m, Cols: n, Stride: n})
			for i := 0; i < m; i++ {
				for j := 0; j < n+pad; j++ {
					g := got.Data[i*(n+pad)+j]
					if j >= n {
						if g != c0.Data[i*c0.Stride+j] {
							t.Fatalf("%v pad %d: the stride gap at (%d,%d) was overwritten", s, pad, i, j)
						}
						continue
					}
					if e := math.Abs(float64(g) - ref[i*n+j]); !(e <= bound[i*n+j]) && e != 0 {
						t.Fatalf("%v pad %d: C[%d][%d] = %v, want %v", s, pad, i, j, g, ref[i*n+j])
					}
				}
			}
		}
	}
}

func TestWrapBufferChecks(t *testing.T) {
	d := openDevice(t, BackendEGL)
	m := newMatrix(t, d, 4, 4)
	conformance.MustPanic(t, "past the end of the buffer", func() { d.WrapBuffer(m.Buffer(), 1, 4, 4, 4) })
	conformance.MustPanic(t, "not a buffer object", func() { d.WrapBuffer(987654, 0, 1, 1, 1) })
	if _, err := d.WrapBuffer(m.Buffer(), 0, 2, 4, 8); err != nil {
		t.Errorf("a view inside the buffer was refused: %v", err)
	}
}

// TestResidentAndHostPathsShareProgram alternates resident products (with
// vec4 offsets) and host products on one Device and one fast program: each
// must see its own uniforms, not values the other left cached.
func TestResidentAndHostPathsShareProgram(t *testing.T) {
	d := openDevice(t, BackendEGL)
	rng := rand.New(rand.NewPCG(61, 62))
	a, b := conformance.RandomPadded(36, 20, 0, rng), conformance.RandomPadded(20, 44, 0, rng)
	ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, a, b, 0, blas32.General{Rows: 36, Cols: 44, Stride: 44})
	check := func(what string, got blas32.General) {
		t.Helper()
		for i := range ref {
			if e := math.Abs(float64(got.Data[i]) - ref[i]); !(e <= bound[i]) && e != 0 {
				t.Fatalf("%s: C[%d] = %v, want %v", what, i, got.Data[i], ref[i])
			}
		}
	}
	ga, gb, gc := resident(t, d, a, 8), resident(t, d, b, 12), resident(t, d, cpu.New(36, 44), 4)
	for round := 0; round < 2; round++ {
		if err := gc.Mul(ga, gb); err != nil {
			t.Fatal(err)
		}
		got := cpu.New(36, 44)
		gc.Download(got)
		check("resident", got)
		host := cpu.New(36, 44)
		if _, err := d.Mul(host, a, b, &MulOptions{Kernel: d.kernelFor(36, 20, 44)}); err != nil {
			t.Fatal(err)
		}
		check("host", host)
	}
}

// TestResidentTransposedA: with a default that reads A transposed, resident
// products wide enough to keep it transpose A into the device's scratch
// buffer first (grown to the largest A, reused), alone, back to back with
// different A's and with natural products between them, in and out of a
// Scope; where the transpose kernel does not fit, they read A as it is.
func TestResidentTransposedA(t *testing.T) {
	const at, natural = "fast:128x128x8_8x8_db_at", "fast:64x64x8_4x4"
	rng := rand.New(rand.NewPCG(61, 62))
	setDefaults := func(d *Device) {
		d.info.DefaultKernel, d.info.NaturalKernel, d.info.NaturalWideKernel, d.info.SmallGridKernel, d.info.ClassKernels = at, natural, "", "", nil
	}
	// m rows of A not a multiple of 4 or of the tile, k not of BK; n ≥
	// tuning.TransposedAMinN keeps _at; n = 64 reads A as it is.
	shapes := [][3]int{{130, 36, 2048}, {8, 12, 2048}, {3, 20, 2048}, {70, 28, 64}, {129, 44, 2048}}
	type product struct {
		a, b       blas32.General
		ga, gb, gc *Matrix
	}
	var ps []product
	d := openDevice(t, BackendEGL)
	setDefaults(d)
	for i, s := range shapes {
		a, b := conformance.RandomPadded(s[0], s[1], 0, rng), conformance.RandomPadded(s[1], s[2], 0, rng)
		// A at an element offset in its buffer (a multiple of 4: the fast layout).
		ps = append(ps, product{a, b, resident(t, d, a, 4*i), resident(t, d, b, 8), resident(t, d, conformance.RandomPadded(s[0], s[2], 0, rng), 0)})
	}
	check := func(what string) {
		t.Helper()
		for _, p := range ps {
			m, n := p.a.Rows, p.b.Cols
			got := cpu.New(m, n)
			if err := p.gc.Download(got); err != nil {
				t.Fatal(err)
			}
			ref, bound := conformance.GemmRef(blas.NoTrans, blas.NoTrans, 1, p.a, p.b, 0, blas32.General{Rows: m, Cols: n, Stride: n})
			for i := range ref {
				if e := math.Abs(float64(got.Data[i]) - ref[i]); !(e <= bound[i]) && e != 0 {
					t.Fatalf("%s: %d×%d×%d: C[%d] = %v, want %v", what, m, p.a.Cols, n, i, got.Data[i], ref[i])
				}
			}
		}
	}
	mulAll := func() error {
		var errs []error
		for _, p := range ps {
			errs = append(errs, p.gc.Mul(p.ga, p.gb))
		}
		return errors.Join(errs...)
	}
	poison := func() {
		for _, p := range ps {
			p.gc.Upload(conformance.RandomPadded(p.gc.Rows, p.gc.Cols, 0, rng))
		}
	}
	if err := mulAll(); err != nil {
		t.Fatal(err)
	}
	check("one after another")
	poison()
	if err := d.Scope(func() error { return errors.Join(mulAll(), mulAll()) }); err != nil {
		t.Fatal(err)
	}
	check("in a Scope, twice")
	d.call(func() {
		if _, ok := d.programs[at]; !ok {
			t.Errorf("no resident product ran %s", at)
		}
		if _, ok := d.programs[natural]; !ok {
			t.Errorf("the narrow product did not run %s", natural)
		}
		// The largest A's transpose: 44 rows of 132 floats.
		if want := int64(4 * 44 * 132); d.scratchBytes != want || d.scratchT == 0 {
			t.Errorf("scratch of %d bytes, want %d", d.scratchBytes, want)
		}
	})

	// A device whose shared memory holds the kernel but not the transpose.
	d2 := openDevice(t, BackendEGL)
	setDefaults(d2)
	k, _ := shaders.Lookup(at)
	if tk := shaders.Transpose(); tk.SharedBytes <= k.SharedBytes {
		t.Fatalf("the transpose (%d bytes of shared memory) fits wherever %s (%d) does", tk.SharedBytes, at, k.SharedBytes)
	}
	d2.info.MaxSharedMemory = k.SharedBytes
	a, b := conformance.RandomPadded(40, 16, 0, rng), conformance.RandomPadded(16, 2048, 0, rng)
	ps = []product{{a, b, resident(t, d2, a, 0), resident(t, d2, b, 0), resident(t, d2, cpu.New(40, 2048), 0)}}
	if err := mulAll(); err != nil {
		t.Fatal(err)
	}
	check("no room for the transpose")
	d2.call(func() {
		if _, ok := d2.programs[at]; ok || d2.scratchT != 0 {
			t.Errorf("without room for the transpose a resident product compiled %s or made a scratch", at)
		}
	})
}
