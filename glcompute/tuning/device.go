package tuning

import (
	"fmt"
	"slices"
	"time"

	"github.com/glmul/glmul/shaders"
)

// Device is what measuring and tuning ask of a glcompute.Device beyond its
// products (tuner.Of, package glcompute/tuner): the kernels it can run and would
// choose, its compiled programs, its staging. Its methods are safe from
// any goroutine where the device's own are, and panic on a released
// device.
type Device interface {
	// Candidates are the kernel specs glmul tune sweeps on the device:
	// the cpu family's on Mesa llvmpipe where it fits, else FastCandidates.
	Candidates() []string
	// Fits returns nil if the kernel spec can run on the device, else an
	// error (matching glcompute.ErrUnsupported where it cannot) that says
	// why.
	Fits(spec string) error
	// KernelFor is the kernel spec an m×k by k×n product runs with when
	// its options leave the choice to the device.
	KernelFor(m, k, n int) string
	// ProgramBinary compiles the kernel spec names ("" or "fast": the
	// device's choice for large products) and returns the driver's
	// program binary (NVIDIA's holds its assembly as text).
	ProgramBinary(spec string) ([]byte, error)
	// Staging says how host matrices reach the GPU: the mapping, the
	// staging buffers' size and the copy goroutines.
	Staging() string
	// PrepareStaging makes the staging buffers now, on an owned device's
	// thread without waiting, so that the first host product finds them.
	PrepareStaging()
}

// Stages are the stages of one host product, handed to a
// glcompute.MulOptions.Measure hook on the device's thread and valid only
// during its call: what to run, how often and what to make of the times
// is the hook's (glmul's reports: cmd/glmul/internal/measure).
type Stages interface {
	// Idle is how long the device had had no work when the product
	// began: an idle GPU lowers its clocks.
	Idle() time.Duration
	// Panels reports whether the product runs in panels: Upload and
	// ReadBack then do nothing, and Run runs the first panel on whatever
	// its buffers hold (a warm-up).
	Panels() bool
	// Dispatches is how many times one Run calls onDispatch.
	Dispatches() int
	// Upload copies A and B to the GPU, poisons C's buffer with NaN and
	// waits: the time taken and the bytes copied.
	Upload() (time.Duration, int64, error)
	// TimerUsable reports whether Run can time with the GL timer.
	TimerUsable() bool
	// Run runs the whole product once and waits: its wall time and, with
	// timer and TimerUsable, the GL timer's time (0 where it read under a
	// microsecond). Judge the timer over several runs (TimerPlausible).
	Run(timer bool, onDispatch func()) (wall, gpu time.Duration, err error)
	// ReadBack copies C to host memory: the time taken and the bytes.
	ReadBack() (time.Duration, int64, error)
}

// TimerPlausible reports whether the GL timer's readings gpu of runs that
// took wall by the wall clock are real times: each at least a
// microsecond, and their median at least a twentieth of the wall clock's
// (which adds only the host's overhead); medians, so that one run's stall
// of the host does not discard a real timer (docs/DRIVERS.md, "GL timers
// that read no real time").
func TimerPlausible(gpu, wall []time.Duration) bool {
	if len(gpu) == 0 || len(wall) == 0 || slices.Min(gpu) < time.Microsecond {
		return false
	}
	return median(gpu)*20 >= median(wall)
}

// median returns the median of ts (the upper one of an even count).
func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

// CheckKernel returns an error unless spec names a kernel (the grammar of
// glcompute.MulOptions.Kernel); it says nothing of whether a device can
// run it (Device.Fits).
func CheckKernel(spec string) error {
	if _, err := shaders.Lookup(spec); err != nil {
		return fmt.Errorf("glcompute: %w", err)
	}
	return nil
}

// FastCandidates returns the specs of every configuration of the fast
// kernel that glmul tune tries ("fast:128x128x8_8x8", ...).
func FastCandidates() []string {
	var out []string
	for _, c := range shaders.FastCandidates() {
		out = append(out, "fast:"+c.String())
	}
	return out
}
