package glcompute

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/glcompute/internal/thread"
)

// glContext is what the two backends provide.
type glContext interface {
	MakeCurrent() error
	ReleaseCurrent()
	Release()
}

// Device is an OpenGL context ready for matrix products.
type Device struct {
	opts   Options
	thread *thread.OSThread
	info   Info

	mu       sync.Mutex
	released bool
	borrowed bool // the host's context: no thread, state saved and restored
	ctx      glContext
	programs map[string]*program
	// programsLoaded counts programs loaded from Options.ProgramCache.
	programsLoaded int
	stager         *staging.Stager          // created on the first host product
	hostMats       map[*float32]*HostMatrix // by the address of Data[0]
	// bindAlign is the byte alignment of bound buffer ranges:
	// GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT (and that of buffer
	// textures) rounded up to a multiple of 16, so that offsets in vec4s
	// stay whole.
	bindAlign int
	// named: the context has direct state access (OpenGL 4.5 or
	// GL_ARB_direct_state_access), so WrapBuffer reads a host buffer's
	// size without binding it (glw.Buffer.NamedSize says why that matters).
	named bool
	// scoped: inside Scope, calls neither save nor restore the host's
	// state and put only storage barriers after their dispatches.
	scoped bool
	// hostContext returns the context current on the calling thread in
	// the API of the borrowed one (EGL or GLX), and hostCurrent is the
	// borrowed context: every call checks that they agree.
	hostContext func() uintptr
	hostCurrent uintptr
	// born and lastWork (nanoseconds after born, atomic) say when the
	// device last had work: its creation, then each Mul's end
	// (Stages.Idle).
	born     time.Time
	lastWork atomic.Int64
	pool     []pooled // device buffers kept for the next host product
	// scratchT holds A transposed for resident products whose kernel reads
	// it so (mulTransposed): scratchBytes of it, grown to the largest A
	// seen, never shrunk, and kept until Release.
	scratchT     glw.Buffer
	scratchBytes int64
	// work is the workspace of resident products that split K or run
	// stream-K (residentfill.go): workBytes of it, grown to the largest
	// asked for, never shrunk, and kept until Release. workFailed, where
	// not 0, is the size of workspace the driver was out of memory for:
	// none that large is asked for again.
	work       glw.Buffer
	workBytes  int64
	workFailed int64
	// residentTextures: resident products keep a _tex configuration at
	// any size, not only from tuning.ResidentTexturesMin (tests).
	residentTextures bool
	// texs are the buffer textures of A and B for kernels that read
	// through textures (created on first use), texBound says they view a
	// buffer now, and texBlock is the most bytes one views (0: the driver
	// has no buffer textures).
	texs     [2]glw.Texture
	texBound bool
	texBlock int64
	// fp64 is nil where the context's shaders have float64, else why not
	// (checkFloat64, at creation).
	fp64 error
	// runs64 counts the float64 products run on the GPU (tests).
	runs64 atomic.Int64
	// told64 has a bit for each kind of error BLAS64.Fallback was
	// told (fallbackKinds).
	told64 atomic.Uint32
	// loopBudget is the loop iterations one shader invocation may run,
	// all its loops together (0: no limit; loops.go).
	loopBudget int
	// poolTex holds every buffer of the pool (pool, and those a running
	// host product took from it): a buffer texture viewing all of it once
	// a kernel read it through one (bindStorage), else 0. Such a texture
	// lives as long as its buffer (releasePooled).
	poolTex map[glw.Buffer]glw.Texture
	// saved is the borrowed context's state that the running call (or
	// Scope) restores, which binding textures adds to; nil otherwise.
	saved *glw.State
	// bound is what the last resident call left bound, while no other
	// call can have changed it (see boundState).
	bound boundState
	// streams are the MulStreams whose GPU stage holds GPU matrices of
	// the Device, streamWG counting them: Release stops them and waits
	// for them before it deletes anything (stopStreams). releasing, set
	// then, keeps another from starting.
	streams   map[*streamStages]struct{}
	streamWG  sync.WaitGroup
	releasing bool
}

// boundState is the program and storage ranges a resident product left
// bound inside a Scope, where nothing else changes them (the host
// promises not to, and every other glmul call forgets them): the next
// resident product skips binding what is already bound, most of a scoped
// call's GL time (docs/PERFORMANCE.md, "Issue 12, fourth session").
type boundState struct {
	valid  bool
	prog   glw.Program
	ranges [3]boundRange
}

// boundRange is a storage binding's buffer and byte range.
type boundRange struct {
	buf         glw.Buffer
	start, size int64
}

// Info returns the device's strings and limits, also after Release. Safe
// from any goroutine.
func (d *Device) Info() Info { return d.info }

// idle is how long ago the device last had work.
func (d *Device) idle() time.Duration {
	return time.Since(d.born) - time.Duration(d.lastWork.Load())
}

// worked records that the device had work now.
func (d *Device) worked() { d.lastWork.Store(int64(time.Since(d.born))) }

// Release deletes what the Device made (programs, the buffers it keeps
// between calls, and for an owned context the context itself and its
// thread). It is idempotent; using the Device
// afterwards panics, except Info, which goes on describing it. Owned: safe from any goroutine. Borrowed: call it on
// the host's thread with its context current.
//
// A call in progress (a Mul, say) ends first. A MulStream in progress
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

// stopStreams stops the MulStreams whose GPU stage runs, with
// ErrReleased, and waits until those stages have released their GPU
// matrices; a MulStream that comes to its GPU stage later fails
// (startStream).
func (d *Device) stopStreams() {
	d.mu.Lock()
	d.releasing = true
	for st := range d.streams {
		st.cancel(errReleasedDuringStream)
	}
	d.mu.Unlock()
	d.streamWG.Wait()
}

// errReleasedDuringStream stops a MulStream that Release interrupted.
var errReleasedDuringStream = fmt.Errorf("%w during MulStream: the product stopped between panels; C is incomplete", ErrReleased)

// startStream records that st's GPU stage is about to start, or returns
// ErrReleased once Release has begun.
func (d *Device) startStream(st *streamStages) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.releasing {
		return fmt.Errorf("%w before MulStream's GPU stage could start", ErrReleased)
	}
	if d.streams == nil {
		d.streams = map[*streamStages]struct{}{}
	}
	d.streams[st] = struct{}{}
	d.streamWG.Add(1)
	return nil
}

// endStream records that st's GPU stage has released its matrices.
func (d *Device) endStream(st *streamStages) {
	d.mu.Lock()
	delete(d.streams, st)
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
