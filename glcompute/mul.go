package glcompute

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/dispatch"
	"github.com/glmul/glmul/shaders"
)

// DefaultMaxGroups is the paper's cap on work groups per dispatch and axis
// (64×64), which keeps each dispatch short enough for Windows' GPU watchdog.
const DefaultMaxGroups = dispatch.DefaultMaxGroups

// MulOptions configure one Mul. A nil *MulOptions means the zero value of
// every field.
type MulOptions struct {
	// Kernel names the compute shader (see shaders.Names). Zero value "":
	// "tiled32", the paper's kernel.
	Kernel string
	// MaxGroups caps the work groups per dispatch along each axis. Zero
	// value: DefaultMaxGroups (64).
	MaxGroups int
	// Warmup runs the whole product this many times, untimed, before the
	// timed runs (drivers may finish compiling on the first dispatch). Zero
	// value: none.
	Warmup int
	// Reps is the number of timed runs. Zero value: 1.
	Reps int
	// Progress, if set, is called as dispatches complete, with the number
	// done and the total over all warm-up and timed runs. It runs on the
	// device's thread and must not call the Device. Tracking progress puts
	// a fence and a flush after every dispatch. Zero value: no calls.
	Progress func(done, total int)
}

// Timings of one Mul. Wall-clock times are measured on the CPU after
// glFinish; GPU times come from GL_TIME_ELAPSED queries.
type Timings struct {
	// Dispatches is the number of compute dispatches per run.
	Dispatches int `json:"dispatches"`
	// Groups is the number of work groups along x (columns) and y (rows).
	Groups [2]int `json:"groups"`
	// Upload is the time to create and fill the buffers of A and B (and
	// allocate and poison C's).
	Upload time.Duration `json:"upload_ns"`
	// Compute holds the wall-clock time of each timed run.
	Compute []time.Duration `json:"compute_ns"`
	// GPU holds the GL_TIME_ELAPSED time of each timed run, or is nil where
	// the driver's timer is unusable (Mesa llvmpipe reports ≈0 for compute).
	GPU []time.Duration `json:"gpu_ns,omitempty"`
	// Readback is the time to copy C back to the CPU.
	Readback time.Duration `json:"readback_ns"`
	// UploadBytes and ReadbackBytes are the bytes moved each way.
	UploadBytes   int64 `json:"upload_bytes"`
	ReadbackBytes int64 `json:"readback_bytes"`
}

// maxIndex is the largest element index the kernels' 32-bit uint arithmetic
// can address.
const maxIndex = math.MaxUint32

// CheckShape reports whether an m×k by k×n product fits this device: each
// matrix within one shader storage block and 32-bit indices. It returns an
// error matching ErrTooLarge that names the limit and the largest square
// size that fits. It panics if a dimension is below 1. Safe from any
// goroutine.
func (d *Device) CheckShape(m, k, n int) error {
	if m < 1 || k < 1 || n < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	limit := d.info.MaxSSBOBlockSize
	largest := int(math.Sqrt(float64(min(limit/4, maxIndex))))
	for _, mat := range []struct {
		name       string
		rows, cols int
	}{{"A", m, k}, {"B", k, n}, {"C", m, n}} {
		elems := float64(mat.rows) * float64(mat.cols)
		bytes := elems * 4
		if bytes > float64(limit) || elems > maxIndex {
			return fmt.Errorf("%w: %s is %d×%d float32 = %s, over this driver's largest shader storage block (GL_MAX_SHADER_STORAGE_BLOCK_SIZE = %s); the largest square size that fits is n = %d",
				ErrTooLarge, mat.name, mat.rows, mat.cols, formatBytes(bytes), formatBytes(float64(limit)), largest)
		}
	}
	return nil
}

func formatBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f bytes", b)
}

// program is a compiled kernel and its uniform locations.
type program struct {
	kernel          shaders.Kernel
	prog            glw.Program
	m, n, l, x0, y0 int32
}

func (p *program) release() { p.prog.Release() }

// program returns the compiled kernel called name; on the device thread.
func (d *Device) program(name string) (*program, error) {
	if p, ok := d.programs[name]; ok {
		return p, nil
	}
	k, err := shaders.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("glcompute: %v", err)
	}
	prog, err := glw.NewComputeProgram(k.File, k.Source)
	if err != nil {
		var ce *glw.CompileError
		if errors.As(err, &ce) && d.opts.Verbose {
			return nil, fmt.Errorf("%w: %v\n%s", ErrDriver, err, ce.NumberedSource())
		}
		return nil, fmt.Errorf("%w: %v", ErrDriver, err)
	}
	p := &program{kernel: k, prog: prog,
		m: prog.Uniform("m"), n: prog.Uniform("n"), l: prog.Uniform("l"),
		x0: prog.Uniform("x0"), y0: prog.Uniform("y0")}
	d.programs[name] = p
	return p, nil
}

// Mul computes C = A·B on the GPU: it uploads A and B, runs the product
// opts.Warmup + opts.Reps times, and reads C back once. C is overwritten
// entirely; A and B are not modified. Safe from any goroutine.
//
// It panics if the shapes disagree or a slice is too short for its shape and
// stride.
func (d *Device) Mul(c, a, b blas32.General, opts *MulOptions) (Timings, error) {
	checkGeneral("A", a)
	checkGeneral("B", b)
	checkGeneral("C", c)
	if a.Cols != b.Rows {
		panic("glcompute: inner dimensions of A and B differ")
	}
	if c.Rows != a.Rows || c.Cols != b.Cols {
		panic("glcompute: C has the wrong shape")
	}
	var o MulOptions
	if opts != nil {
		o = *opts
	}
	if o.Kernel == "" {
		o.Kernel = "tiled32"
	}
	if o.Reps <= 0 {
		o.Reps = 1
	}
	if o.MaxGroups <= 0 {
		o.MaxGroups = DefaultMaxGroups
	}
	if err := d.CheckShape(a.Rows, a.Cols, b.Cols); err != nil {
		return Timings{}, err
	}
	if lim := min(d.info.MaxWorkGroupCount[0], d.info.MaxWorkGroupCount[1]); o.MaxGroups > lim {
		return Timings{}, fmt.Errorf("%w: %d work groups per dispatch requested, the driver allows %d (GL_MAX_COMPUTE_WORK_GROUP_COUNT)", ErrUnsupported, o.MaxGroups, lim)
	}
	var t Timings
	var err error
	d.call(func() { t, err = d.mul(c, a, b, &o) })
	return t, err
}

func checkGeneral(name string, m blas32.General) {
	if m.Rows < 1 || m.Cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	if m.Stride < m.Cols {
		panic("glcompute: stride shorter than a row")
	}
	if len(m.Data) < (m.Rows-1)*m.Stride+m.Cols {
		panic("glcompute: matrix data shorter than its shape")
	}
	_ = name
}

// contiguous returns m's elements packed row after row, without copying
// when they already are.
func contiguous(m blas32.General) []float32 {
	if m.Stride == m.Cols {
		return m.Data[:m.Rows*m.Cols]
	}
	out := make([]float32, 0, m.Rows*m.Cols)
	for i := 0; i < m.Rows; i++ {
		out = append(out, m.Data[i*m.Stride:i*m.Stride+m.Cols]...)
	}
	return out
}

// driverError classifies a GL error.
func driverError(err error) error {
	if errors.Is(err, glw.ErrOutOfMemory) {
		return fmt.Errorf("%w: %v", ErrOutOfMemory, err)
	}
	return fmt.Errorf("%w: %v", ErrDriver, err)
}

// mul runs on the device thread.
func (d *Device) mul(c, a, b blas32.General, o *MulOptions) (t Timings, err error) {
	glw.ClearErrors()
	p, err := d.program(o.Kernel)
	if err != nil {
		return t, err
	}
	m, k, n := a.Rows, a.Cols, b.Cols
	plan, err := dispatch.New(m, n, p.kernel.TileM, p.kernel.TileN, o.MaxGroups)
	if err != nil {
		return t, fmt.Errorf("glcompute: %v", err)
	}
	t.Dispatches, t.Groups = len(plan.Chunks), [2]int{plan.GroupsX, plan.GroupsY}

	ad, bd := contiguous(a), contiguous(b)
	start := time.Now()
	bufA := glw.NewStorageBuffer(4*m*k, unsafe.Pointer(&ad[0]), glw.StaticDraw)
	defer bufA.Release()
	bufB := glw.NewStorageBuffer(4*k*n, unsafe.Pointer(&bd[0]), glw.StaticDraw)
	defer bufB.Release()
	bufC := glw.NewStorageBuffer(4*m*n, nil, glw.StaticRead)
	defer bufC.Release()
	// Poison C: an element the kernel fails to write reads back as NaN and
	// fails validation.
	bufC.FillFloat32(float32(math.NaN()))
	glw.Finish()
	t.Upload = time.Since(start)
	t.UploadBytes = int64(4 * (m*k + k*n))
	if err := glw.CheckError("uploading A and B"); err != nil {
		return t, driverError(err)
	}

	p.prog.Use()
	defer glw.Program(0).Use()
	glw.SetUint(p.m, uint32(m))
	glw.SetUint(p.n, uint32(k))
	glw.SetUint(p.l, uint32(n))
	bufA.BindStorage(0)
	bufB.BindStorage(1)
	bufC.BindStorage(2)
	defer func() {
		for i := uint32(0); i < 3; i++ {
			glw.Buffer(0).BindStorage(i)
		}
	}()

	prog := progress{report: o.Progress, total: len(plan.Chunks) * (o.Warmup + o.Reps)}
	run := func() {
		for _, ch := range plan.Chunks {
			glw.SetUint(p.x0, uint32(ch.X0))
			glw.SetUint(p.y0, uint32(ch.Y0))
			glw.Dispatch(ch.GroupsX, ch.GroupsY)
			prog.dispatched()
		}
		prog.drain()
	}
	for i := 0; i < o.Warmup; i++ {
		run()
		glw.Finish()
	}
	query := glw.NewQuery()
	defer query.Release()
	gpu := make([]time.Duration, 0, o.Reps)
	for i := 0; i < o.Reps; i++ {
		glw.Finish()
		start := time.Now()
		query.BeginTimeElapsed()
		run()
		glw.EndTimeElapsed()
		glw.Finish()
		t.Compute = append(t.Compute, time.Since(start))
		gpu = append(gpu, time.Duration(query.Nanoseconds()))
	}
	if err := glw.CheckError("dispatching " + p.kernel.File); err != nil {
		return t, driverError(err)
	}
	if d.info.TimerBits > 0 && timerPlausible(gpu, t.Compute) {
		t.GPU = gpu
	}

	start = time.Now()
	glw.BarrierBufferRead()
	if c.Stride == c.Cols {
		bufC.Read(0, 4*m*n, unsafe.Pointer(&c.Data[0]))
	} else {
		tmp := make([]float32, m*n)
		bufC.Read(0, 4*m*n, unsafe.Pointer(&tmp[0]))
		for i := 0; i < m; i++ {
			copy(c.Data[i*c.Stride:i*c.Stride+n], tmp[i*n:(i+1)*n])
		}
	}
	t.Readback = time.Since(start)
	t.ReadbackBytes = int64(4 * m * n)
	if err := glw.CheckError("reading C back"); err != nil {
		return t, driverError(err)
	}
	return t, nil
}

// timerPlausible reports whether GL_TIME_ELAPSED results look real. Mesa's
// llvmpipe (22.x) runs compute on the CPU outside its timer and reports
// about zero; a real timer gives a positive time for every run and, summed,
// a sizeable share of the wall-clock time (which adds only CPU overhead).
func timerPlausible(gpu, wall []time.Duration) bool {
	var g, w time.Duration
	for i := range gpu {
		if gpu[i] <= 0 {
			return false
		}
		g += gpu[i]
		w += wall[i]
	}
	return g*20 >= w
}

// progress reports completed dispatches through fences.
type progress struct {
	report      func(done, total int)
	total, done int
	pending     []glw.Fence
}

func (p *progress) dispatched() {
	if p.report == nil {
		return
	}
	glw.Flush()
	p.pending = append(p.pending, glw.NewFence())
	p.poll(0)
}

// poll reports the fences that have passed, waiting up to timeoutNs for each.
func (p *progress) poll(timeoutNs uint64) {
	for len(p.pending) > 0 && p.pending[0].Signaled(timeoutNs) {
		p.pending[0].Release()
		p.pending = p.pending[1:]
		p.done++
		p.report(p.done, p.total)
	}
}

// drain waits for every pending fence.
func (p *progress) drain() {
	for len(p.pending) > 0 {
		p.poll(uint64(100 * time.Millisecond))
	}
}
