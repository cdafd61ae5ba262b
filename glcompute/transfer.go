package glcompute

import (
	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/thread"
)

// transferQueue is a second OpenGL context that shares the Device's
// objects, current on a thread of its own, for the copies of a pipelined
// product. A context runs its commands in order, so copies queued behind
// a dispatch wait for it; a second context's copies run beside it. On
// the H100 (NVIDIA 580), a 256 MiB copy from mapped host memory (5.2 ms
// alone) and a 3.7 ms dispatch took 8.9 ms in one context and 5.5 ms in
// two; a product's pipeline did not get faster (docs/PERFORMANCE.md), so
// it is opt-in (Options.TransferContext). The host orders the contexts
// through fences: it waits for a band's copies before queueing its
// dispatch, and for a dispatch before queueing the copy of its result.
type transferQueue struct {
	ctx    *egl.Context
	thread *thread.OSThread
}

// transfers returns the Device's transfer queue, making it on first use,
// or nil: a borrowed or GLFW context (the Device cannot make a second one
// beside it), Options.TransferContext unset, or staging without persistent
// mappings (a chunk mapped in one context would be copied in another).
// If the driver refuses the context, the reason is kept for Staging. On
// the device thread.
func (d *Device) transfers() *transferQueue {
	if d.xferTried {
		return d.xfer
	}
	d.xferTried = true
	c, ok := d.ctx.(*egl.Context)
	if !ok || d.borrowed || !d.opts.TransferContext || !d.stage().persistent {
		return nil
	}
	shared, err := c.NewShared()
	if err != nil {
		d.xferErr = err
		return nil
	}
	q := &transferQueue{ctx: shared, thread: thread.New()}
	q.thread.Call(func() { err = shared.MakeCurrent() })
	if err != nil {
		d.xferErr = err
		q.thread.Call(shared.Release)
		q.thread.Stop()
		return nil
	}
	d.xfer = q
	return q
}

// run runs f on the transfer thread, its context current.
func (q *transferQueue) run(f func()) { q.thread.Call(f) }

// fence queues a fence on the transfer context, flushed so that another
// context may wait for it.
func (q *transferQueue) fence() (f glw.Fence) {
	q.run(func() {
		f = glw.NewFence()
		glw.Flush()
	})
	return f
}

// release destroys the context on its own thread (egl's Release unbinds
// the calling thread's context) and stops the thread.
func (q *transferQueue) release() {
	q.thread.Call(q.ctx.Release)
	q.thread.Stop()
}
