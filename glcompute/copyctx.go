package glcompute

import (
	"fmt"

	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/thread"
	"github.com/glmul/glmul/glcompute/internal/trace"
)

// copyContext is a second OpenGL context that shares the device's objects
// and is current on a thread of its own; a pipelined pass issues its
// buffer copies there. A GPU runs one context's commands in order, so in
// the device's context a band's copies wait for the dispatches queued
// before them. NVIDIA runs two contexts' commands side by side: on the
// H100 a 128 MiB copy from another context hid 74% of itself behind a
// 5 ms dispatch (bench/copyprobe, docs/PERFORMANCE.md).
//
// Between the two contexts only fences order the work: whatever one
// context writes that the other reads is read after a server-side wait
// (glWaitSync) on a fence placed after the write and flushed. Every
// method runs on the device thread; do hands the copy context's work to
// its thread and waits for it, so neither context is ever used by two
// threads.
type copyContext struct {
	ctx    glContext
	thread *thread.OSThread
}

// copies returns the device's copy context, making it on first use: an
// owned EGL context shares its objects with a second one (eglCreateContext
// with share_context), made current on a new OS thread. nil, and the
// pass copies in the device's own context, for a borrowed context, a GLFW
// one (not built: see docs/PERFORMANCE.md), Options.NoCopyContext, or
// where the driver refuses the second context (remembered in
// copyContextErr, which Info's CopyContext reports). On the device thread.
func (d *Device) copies() *copyContext {
	if d.cc != nil || d.ccErr != nil || d.borrowed || d.opts.NoCopyContext {
		return d.cc
	}
	c, ok := d.ctx.(*egl.Context)
	if !ok {
		d.ccErr = fmt.Errorf("a %s context: only EGL's make a second, shared one here", d.info.Backend)
		return nil
	}
	s, err := c.NewShared()
	if err != nil {
		d.ccErr = err
		return nil
	}
	t := thread.New()
	t.Call(func() { err = s.MakeCurrent() })
	if err != nil {
		t.Call(s.Release)
		t.Stop()
		d.ccErr = err
		return nil
	}
	trace.Stage("copy context: shared EGL context made current on its thread")
	d.cc = &copyContext{ctx: s, thread: t}
	return d.cc
}

// CopyContext reports whether pipelined host products issue their buffer
// copies from a second, shared context (true once one was made: owned EGL
// devices, on the first product pipelined in more than one step), and
// why not where one was refused. Safe from any goroutine after a product.
func (d *Device) CopyContext() (used bool, why error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ccUsed, d.ccErr
}

// do runs f on the copy context's thread and waits for it.
func (cc *copyContext) do(f func()) { cc.thread.Call(f) }

// fence places a fence after the copy context's commands so far, flushed,
// for the device's context to wait on.
func (cc *copyContext) fence() (f glw.Fence) {
	cc.do(func() { f = glw.NewFence(); glw.Flush() })
	return f
}

// after makes the copy context's later commands wait (on the GPU) for the
// fence f, placed and flushed by the device's context, and deletes it.
func (cc *copyContext) after(f glw.Fence) {
	cc.do(func() { f.WaitServer(); f.Release() })
}

// afterDevice makes the copy context's later commands wait for every
// command the device's context has issued so far; on the device thread.
func (cc *copyContext) afterDevice() {
	f := glw.NewFence()
	glw.Flush()
	cc.after(f)
}

// check returns the copy context's GL error, if any.
func (cc *copyContext) check(what string) (err error) {
	cc.do(func() { err = glw.CheckError(what) })
	if err != nil {
		return driverError(err)
	}
	return nil
}

// finish waits for every command of the copy context (after a pass that
// failed midway, whose copies may still be in flight).
func (cc *copyContext) finish() { cc.do(glw.Finish) }

// release destroys the context on its thread and stops the thread.
func (cc *copyContext) release() {
	cc.do(func() {
		cc.ctx.ReleaseCurrent()
		cc.ctx.Release()
	})
	cc.thread.Stop()
}
