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
	// Kernel names the compute shader as shaders.Lookup reads it:
	// "tiled32" (the paper's), "fast" (the device's tuned or built-in
	// configuration, Info.DefaultKernel) or a configuration such as
	// "fast:128x128x8_8x8". Zero value "": "fast".
	Kernel string
	// MaxGroups caps the work groups per dispatch along each axis. Zero
	// value: DefaultMaxGroups (64).
	MaxGroups int
	// Warmup runs the whole product this many times, untimed, before the
	// timed runs (drivers may finish compiling on the first dispatch). Zero
	// value: none.
	Warmup int
	// MinWarmup extends the warm-up with further untimed runs until it has
	// lasted this long: a GPU left idle (say, during a long CPU loop) runs
	// at idle clocks until it has been busy for a while, and a run or two
	// of a fast kernel is too short to raise them. Zero value: only the
	// Warmup runs.
	MinWarmup time.Duration
	// SplitK splits the inner dimension across this many slices of work
	// groups, each writing a partial C that a second pass adds up: for
	// products whose result has too few tiles to fill the GPU (64×4096×64
	// is one tile). Fast kernel only. Zero value: no split.
	SplitK int
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
	// Kernel is the spec of the kernel that ran ("fast:128x128x8_8x8").
	Kernel string `json:"kernel"`
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
	// Rows as the GPU holds them: padded to a multiple of 4 floats.
	fits := func(rows, cols int) bool {
		elems := float64(rows) * float64(roundUp(cols, 4))
		return elems*4 <= float64(limit) && elems <= maxIndex
	}
	// The largest square n that fits.
	largest := int(math.Sqrt(float64(min(limit/4, maxIndex))))
	for largest > 1 && !fits(largest, largest) {
		largest--
	}
	for _, mat := range []struct {
		name       string
		rows, cols int
	}{{"A", m, k}, {"B", k, n}, {"C", m, n}} {
		if !fits(mat.rows, mat.cols) {
			bytes := 4 * float64(mat.rows) * float64(roundUp(mat.cols, 4))
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

// Mul computes C = A·B on the GPU: it uploads A and B, runs the product
// opts.Warmup + opts.Reps times, and reads C back once. C is overwritten
// entirely; A and B are not modified. Safe from any goroutine.
//
// It panics if the shapes disagree or a slice is too short for its shape and
// stride.
func (d *Device) Mul(c, a, b blas32.General, opts *MulOptions) (Timings, error) {
	checkGeneral(a)
	checkGeneral(b)
	checkGeneral(c)
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
	if o.Kernel == "" || o.Kernel == "fast" {
		o.Kernel = d.kernelFor(a.Rows, a.Cols, b.Cols)
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

func checkGeneral(m blas32.General) {
	if m.Rows < 1 || m.Cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	if m.Stride < m.Cols {
		panic("glcompute: stride shorter than a row")
	}
	if len(m.Data) < (m.Rows-1)*m.Stride+m.Cols {
		panic("glcompute: matrix data shorter than its shape")
	}
}

// packed returns m's rows laid out with stride ld ≥ m.Cols, the padding
// zero-filled, without copying when m already has that layout.
func packed(m blas32.General, ld int) []float32 {
	if m.Stride == ld && (ld == m.Cols || paddingIsZero(m)) {
		return m.Data[:m.Rows*ld]
	}
	out := make([]float32, m.Rows*ld)
	for i := 0; i < m.Rows; i++ {
		copy(out[i*ld:], m.Data[i*m.Stride:i*m.Stride+m.Cols])
	}
	return out
}

func paddingIsZero(m blas32.General) bool {
	if len(m.Data) < m.Rows*m.Stride {
		return false
	}
	for i := 0; i < m.Rows; i++ {
		for _, v := range m.Data[i*m.Stride+m.Cols : (i+1)*m.Stride] {
			if v != 0 {
				return false
			}
		}
	}
	return true
}

// roundUp rounds x up to a multiple of align.
func roundUp(x, align int) int { return (x + align - 1) / align * align }

// clearErrors drains glGetError before glmul's own calls; never on a
// borrowed context, whose error flags are the host's.
func (d *Device) clearErrors() {
	if !d.borrowed {
		glw.ClearErrors()
	}
}

// checkError returns glmul's GL errors after a step; nil on a borrowed
// context (see NewDeviceFromCurrent).
func (d *Device) checkError(what string) error {
	if d.borrowed {
		return nil
	}
	if err := glw.CheckError(what); err != nil {
		return driverError(err)
	}
	return nil
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
	d.clearErrors()
	p, err := d.program(o.Kernel)
	if err != nil {
		return t, err
	}
	m, k, n := a.Rows, a.Cols, b.Cols
	plan, err := dispatch.New(m, n, p.kernel.TileM, p.kernel.TileN, o.MaxGroups)
	if err != nil {
		return t, fmt.Errorf("glcompute: %v", err)
	}
	t.Kernel = p.kernel.Spec()
	t.Dispatches, t.Groups = len(plan.Chunks), [2]int{plan.GroupsX, plan.GroupsY}

	// Row strides on the GPU, rounded up as the kernel needs.
	lda, ldb, ldc := roundUp(k, p.kernel.Align), roundUp(n, p.kernel.Align), roundUp(n, p.kernel.Align)
	ad, bd := packed(a, lda), packed(b, ldb)
	start := time.Now()
	bufA, err := d.newBuffer(4*m*lda, unsafe.Pointer(&ad[0]), glw.StaticDraw, "uploading A")
	if err != nil {
		return t, err
	}
	defer bufA.Release()
	bufB, err := d.newBuffer(4*k*ldb, unsafe.Pointer(&bd[0]), glw.StaticDraw, "uploading B")
	if err != nil {
		return t, err
	}
	defer bufB.Release()
	bufC, err := d.newBuffer(4*m*ldc, nil, glw.StaticRead, "creating C")
	if err != nil {
		return t, err
	}
	defer bufC.Release()
	// Poison C: an element the kernel fails to write reads back as NaN and
	// fails validation.
	bufC.FillFloat32(float32(math.NaN()))
	glw.Finish()
	t.Upload = time.Since(start)
	t.UploadBytes = int64(4 * (m*lda + k*ldb))
	if err := d.checkError("uploading A and B"); err != nil {
		return t, err
	}

	p.prog.Use()
	defer glw.Program(0).Use()
	p.setUints(uniform{"M", m}, uniform{"K", k}, uniform{"N", n})
	if p.kernel.Strided {
		p.setUints(uniform{"lda", lda}, uniform{"ldb", ldb}, uniform{"ldc", ldc},
			uniform{"offA4", 0}, uniform{"offB4", 0}, uniform{"offC4", 0})
	}
	bufA.BindStorage(0)
	bufB.BindStorage(1)
	bufC.BindStorage(2)
	defer func() {
		for i := uint32(0); i < 3; i++ {
			glw.Buffer(0).BindStorage(i)
		}
	}()

	// Split-K: slices of K, each a multiple of the kernel's K step, write
	// partial results to a workspace that reduce.comp adds into C.
	splits, ksplit := 1, k
	if o.SplitK > 1 && p.kernel.StepK > 0 {
		ksplit = roundUp((k+o.SplitK-1)/o.SplitK, p.kernel.StepK)
		splits = (k + ksplit - 1) / ksplit
	}
	if p.kernel.Strided {
		p.setUint("ksplit", uint32(ksplit))
	}
	var work glw.Buffer
	var red *program
	if splits > 1 {
		if bytes := 4 * int64(splits) * int64(m) * int64(ldc); bytes > d.info.MaxSSBOBlockSize {
			return t, fmt.Errorf("%w: split-K workspace of %d partial results is %s, over the largest shader storage block (%s); split less",
				ErrTooLarge, splits, formatBytes(float64(bytes)), formatBytes(float64(d.info.MaxSSBOBlockSize)))
		}
		if red, err = d.programOf(shaders.Reduce()); err != nil {
			return t, err
		}
		if work, err = d.newBuffer(4*splits*m*ldc, nil, glw.StaticRead, "creating the split-K workspace"); err != nil {
			return t, err
		}
		defer work.Release()
	}
	prog := progress{report: o.Progress, total: len(plan.Chunks) * (o.Warmup + o.Reps)}
	run := func() {
		if splits > 1 {
			p.prog.Use()
			bufA.BindStorage(0)
			bufB.BindStorage(1)
			work.BindStorage(2)
		}
		for _, ch := range plan.Chunks {
			p.setUint("x0", uint32(ch.X0))
			p.setUint("y0", uint32(ch.Y0))
			glw.Dispatch3(ch.GroupsX, ch.GroupsY, splits)
			prog.dispatched()
		}
		if splits > 1 {
			glw.BarrierStorage()
			red.prog.Use()
			count := m * ldc / 4
			red.setUint("count", uint32(count))
			red.setUint("splits", uint32(splits))
			red.setUint("offC4", 0)
			work.BindStorage(0)
			bufC.BindStorage(2)
			groups := (count + 255) / 256
			gx := min(groups, 65535)
			glw.Dispatch(gx, (groups+gx-1)/gx)
		}
		prog.drain()
	}
	warmStart := time.Now()
	for i := 0; i < o.Warmup; i++ {
		run()
		glw.Finish()
	}
	if time.Since(warmStart) < o.MinWarmup {
		report := prog.report
		prog.report = nil // these extra runs are not in the progress total
		for time.Since(warmStart) < o.MinWarmup {
			run()
			glw.Finish()
		}
		prog.report = report
	}
	// A host's running GL_TIME_ELAPSED query (borrowed mode) forbids ours.
	timed := d.info.TimerBits > 0 && !glw.TimerBusy()
	var query glw.Query
	if timed {
		query = glw.NewQuery()
		defer query.Release()
	}
	gpu := make([]time.Duration, 0, o.Reps)
	for i := 0; i < o.Reps; i++ {
		glw.Finish()
		start := time.Now()
		if timed {
			query.BeginTimeElapsed()
		}
		run()
		if timed {
			glw.EndTimeElapsed()
		}
		glw.Finish()
		t.Compute = append(t.Compute, time.Since(start))
		if timed {
			gpu = append(gpu, time.Duration(query.Nanoseconds()))
		}
	}
	if err := d.checkError("dispatching " + p.kernel.File); err != nil {
		return t, err
	}
	if timed && timerPlausible(gpu, t.Compute) {
		t.GPU = gpu
	}

	start = time.Now()
	glw.BarrierBufferRead()
	if c.Stride == ldc && ldc == n {
		bufC.Read(0, 4*m*n, unsafe.Pointer(&c.Data[0]))
	} else {
		tmp := make([]float32, m*ldc)
		bufC.Read(0, 4*m*ldc, unsafe.Pointer(&tmp[0]))
		for i := 0; i < m; i++ {
			copy(c.Data[i*c.Stride:i*c.Stride+n], tmp[i*ldc:i*ldc+n])
		}
	}
	t.Readback = time.Since(start)
	t.ReadbackBytes = int64(4 * m * ldc)
	if err := d.checkError("reading C back"); err != nil {
		return t, err
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
