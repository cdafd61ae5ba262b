package glcompute

import (
	"context"
	"fmt"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
)

// Release deletes what the Device made (programs, the buffers it keeps
// between calls, and for an owned context the context itself and its
// thread). It is idempotent; using the Device
// afterwards panics, except Info, which goes on describing it. Owned: safe from any goroutine. Borrowed: call it on
// the host's thread with its context current.
//
// A call in progress (a Mul, say) ends first. A streamed product (package stream) in progress
// stops between panels, returning an error matching ErrReleased, and
// Release waits until its GPU stage has stopped.
func (d *Device) Release() {
	d.mustBeOpen()
	d.stopStreams()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released {
		return
	}
	if d.borrowed {
		d.checkHostContext()
	}
	d.released = true
	if d.borrowed {
		s := glw.SaveState(stateBindings)
		d.releaseObjects()
		s.Restore()
		return
	}
	d.thread.Call(d.releaseContext)
	d.thread.Stop()
}

// stopStreams stops the streamed products whose GPU stage runs, with
// ErrReleased, and waits until those stages have released their GPU
// matrices; a streamed product that comes to its GPU stage later fails
// (startStream).
func (d *Device) stopStreams() {
	d.mu.Lock()
	d.releasing = true
	for _, cancel := range d.streams {
		cancel(errReleasedDuringStream)
	}
	d.mu.Unlock()
	d.streamWG.Wait()
}

// errReleasedDuringStream stops a streamed product that Release interrupted.
var errReleasedDuringStream = fmt.Errorf("%w during a streamed product: it stopped between panels; C is incomplete", ErrReleased)

// startStream records that a streamed product's GPU stage, which cancel stops,
// is about to start, and returns its number for endStream; or it returns
// ErrReleased once Release has begun.
func (d *Device) startStream(cancel context.CancelCauseFunc) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.releasing {
		return 0, fmt.Errorf("%w before the streamed product's GPU stage could start", ErrReleased)
	}
	if d.streams == nil {
		d.streams = map[int]context.CancelCauseFunc{}
	}
	d.lastStream++
	d.streams[d.lastStream] = cancel
	d.streamWG.Add(1)
	return d.lastStream, nil
}

// endStream records that GPU stage number n (startStream's) has released
// its matrices.
func (d *Device) endStream(n int) {
	d.mu.Lock()
	delete(d.streams, n)
	d.mu.Unlock()
	d.streamWG.Done()
}

// releaseObjects deletes the programs, the staging buffers and the
// scratch buffer of resident transposes and the workspace of resident
// splits and stream-K; on the device thread.
func (d *Device) releaseObjects() {
	for name, p := range d.programs {
		p.release()
		delete(d.programs, name)
	}
	for _, st := range []**staging.Stager{&d.units, &d.pieces} {
		if *st != nil {
			(*st).Release()
			*st = nil
		}
	}
	if d.stager != nil {
		d.stager.Release()
		d.stager = nil
	}
	if d.scratchT != 0 {
		d.scratchT.Release()
		d.scratchT, d.scratchBytes = 0, 0
	}
	if d.work != 0 {
		d.work.Release()
		d.work, d.workBytes = 0, 0
	}
	d.workFailed = 0
	d.drainPool()
	for i := range d.texs {
		d.texs[i].Release()
	}
	d.texBound = false
}

// releaseContext runs on the device thread.
func (d *Device) releaseContext() {
	if d.ctx == nil {
		return
	}
	d.releaseObjects()
	d.ctx.ReleaseCurrent()
	d.ctx.Release()
	d.ctx = nil
}

// releaseObject runs free, which deletes one of d's GL objects, on the
// device thread. After d's Release it runs free directly for a borrowed
// context (the host's context still holds the object, and the caller is on
// the host's thread) and not at all for an owned one (its context took its
// objects with it).
func (d *Device) releaseObject(free func()) {
	if !d.isReleased() {
		d.call(free)
	} else if d.borrowed {
		free()
	}
}

// isReleased reports whether Release was called.
func (d *Device) isReleased() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.released
}
