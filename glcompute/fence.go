package glcompute

import (
	"time"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// Fence marks the GPU work queued so far (glFenceSync).
//
// Thread rule: as the Device's methods.
type Fence struct {
	d *Device
	f glw.Fence
}

// Fence returns a fence after all work queued on the Device until now,
// and flushes it to the GPU.
func (d *Device) Fence() *Fence {
	f := &Fence{d: d}
	d.callKeeping(func() {
		f.f = glw.NewFence()
		glw.Flush()
	})
	return f
}

// Wait waits up to timeout for the fence and reports whether it passed.
// Wait(0) polls without blocking. It panics after Release.
func (f *Fence) Wait(timeout time.Duration) bool {
	if f.d == nil {
		panic("glcompute: use of a released Fence")
	}
	var ok bool
	f.d.call(func() { ok = f.f.Signaled(uint64(timeout.Nanoseconds())) })
	return ok
}

// Release deletes the fence. Idempotent, and safe after the Device's
// Release (an owned Device's fences went with its context; a borrowed
// Device's are deleted here, on the host's thread).
func (f *Fence) Release() {
	if f.d != nil {
		f.d.releaseObject(f.f.Release)
	}
	f.d = nil
}

// stepFences are a streamed pass's fences (hoststream.go, unitstream.go):
// [0] after its prologue, [s+1] after step s. Step s copies band s−1 of C
// out, so band j is in staging once [j+2] has passed; done counts the
// bands delivered. On the device thread.
type stepFences struct {
	fences []glw.Fence
	done   int
}

// add appends a flushed fence after the commands queued so far.
func (f *stepFences) add() {
	f.fences = append(f.fences, glw.NewFence())
	glw.Flush()
}

// waitThrough waits up to timeout for fence k (none for k < 0), then
// calls deliver for each band, in order, whose copy out has passed,
// until deliver fails; false where fence k had not passed.
func (f *stepFences) waitThrough(k int, timeout uint64, deliver func(band int) error) (bool, error) {
	if k >= 0 && !f.fences[k].Signaled(timeout) {
		return false, nil
	}
	for f.done+2 < len(f.fences) && f.fences[f.done+2].Signaled(0) {
		if err := deliver(f.done); err != nil {
			return true, err
		}
		f.done++
	}
	return true, nil
}

// idle reports whether the GPU is done with every command fenced: the
// last fence has passed (or none was made).
func (f *stepFences) idle() bool {
	return len(f.fences) == 0 || f.fences[len(f.fences)-1].Done()
}

// release deletes the fences.
func (f *stepFences) release() {
	for i := range f.fences {
		f.fences[i].Release()
	}
}
