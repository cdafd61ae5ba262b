package glcompute

import (
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// stages hands a MulOptions.Measure hook the stages of one Mul, on the
// product's own plan, kernel and GPU buffers, one at a time: the upload
// of A and B, whole runs of the product, the readback of C. What to run,
// how often and what to make of the times (warm-up, repetitions, whether
// the GL timer is believable) is the hook's: glmul's reports measure so,
// in cmd/glmul/internal/measure.
//
// A stages is valid only during the hook's call, on the device's thread.
type stages struct {
	h       *hostProduct // a product in one piece
	c, a, b blas32.General
	// A product in panels: first runs its first panel's product, on d.
	first func() error
	d     *Device
	idle  time.Duration
}

// Idle is how long the device had had no work (no Mul, since its creation
// or the last one's end) when this Mul began: a GPU idle for long enough
// lowers its clocks, and a measurement may first want to raise them.
func (s *stages) Idle() time.Duration { return s.idle }

// Panels reports whether the product runs in panels (Timings.Panels). Its
// stages then cannot be run alone: Upload and ReadBack do nothing and
// return zero, and Run runs the first panel's product on whatever its
// buffers hold (enough to warm the GPU up).
func (s *stages) Panels() bool { return s.first != nil }

// Dispatches is the number of compute dispatches of one Run: the
// progress reports (onDispatch) it makes. A stream-K product's dispatches
// report once, together.
func (s *stages) Dispatches() int {
	switch {
	case s.first != nil:
		return 0 // counted as they are queued
	case s.h.sk != nil:
		return 1
	case s.h.bandRows > 0:
		return (s.h.m + s.h.bandRows - 1) / s.h.bandRows
	}
	return len(s.h.chunks.Chunks)
}

// Upload copies A and B into their GPU buffers, poisons C's with NaN (so
// that an element a run fails to write fails validation), waits for the
// GPU, and returns how long that took and the bytes uploaded. The first
// upload into new buffers costs the driver more than later ones
// (docs/PERFORMANCE.md, "The data path: host matrices to the GPU and back").
func (s *stages) Upload() (time.Duration, int64, error) {
	if s.first != nil {
		return 0, 0, nil
	}
	h := s.h
	d, err := h.upload(s.a, s.b)
	return d, int64(4 * (h.m*h.lda + h.k*h.ldb)), err
}

// TimerUsable reports whether Run can time with the GL timer: the driver
// has one, and no query of the host's (a borrowed context) is running.
func (s *stages) TimerUsable() bool {
	d := s.device()
	return d.info.TimerBits > 0 && !glw.TimerBusy()
}

// Run runs the whole product once and waits for it (glFinish): the wall
// time from before its first dispatch to the finish, and, with timer and
// TimerUsable, the GL_TIME_ELAPSED time of its dispatches; 0 where the
// reading is no real time (under a microsecond: Mesa's llvmpipe reports
// about zero for compute), or without the timer. Whether readings are
// plausible against the wall clock is for the caller to judge over its
// runs (TimerPlausible): one run's wall time may hold a stall of the host.
// onDispatch, if set, is called as each of the Dispatches completes (a
// fence and a flush after each, which costs some time).
func (s *stages) Run(timer bool, onDispatch func()) (wall, gpu time.Duration, err error) {
	if s.first != nil {
		start := time.Now()
		err := s.first()
		return time.Since(start), 0, err
	}
	h := s.h
	timer = timer && s.TimerUsable()
	var query glw.Query
	if timer {
		query = glw.NewQuery()
		defer query.Release()
	}
	h.progress = progress{onDispatch: onDispatch}
	defer func() { h.progress = progress{} }()
	h.bind()
	glw.Finish()
	start := time.Now()
	if timer {
		query.BeginTimeElapsed()
	}
	h.run()
	if timer {
		glw.EndTimeElapsed()
	}
	glw.Finish()
	wall = time.Since(start)
	if timer {
		if gpu = time.Duration(query.Nanoseconds()); gpu < minGPUTime {
			gpu = 0
		}
	}
	return wall, gpu, h.d.checkError("dispatching " + h.p.kernel.File)
}

// ReadBack copies C into host memory, where Mul's C is, and returns how
// long that took and the bytes read back.
func (s *stages) ReadBack() (time.Duration, int64, error) {
	if s.first != nil {
		return 0, 0, nil
	}
	d, err := s.h.readBack(s.c)
	return d, int64(4 * s.h.m * s.h.ldc), err
}

func (s *stages) device() *Device {
	if s.first != nil {
		return s.d
	}
	return s.h.d
}
