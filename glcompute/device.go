package glcompute

import (
	"context"
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
	stager         *staging.Stager // created on the first host product
	// units carries A and C in a streamed panel pass (unitstream.go)
	// where its staging buffers are not stager's size, and pieces B's
	// pieces: staging buffers of their own, kept as stager's are.
	units, pieces *staging.Stager
	// storage is how the context offers glBufferStorage (bufferStorage),
	// read as it is opened.
	storage  glw.Storage
	hostMats map[*float32]*hostMatrix // by the address of Data[0]
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
	// told64 has a bit for each kind of error glblas.Float64.Fallback was
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
	// streams cancel the streamed products whose GPU stage holds GPU matrices
	// of the Device, each under the number startStream gave it
	// (lastStream the latest), streamWG counting them: Release stops
	// them and waits for them before it deletes anything (stopStreams).
	// releasing, set then, keeps another from starting.
	streams    map[int]context.CancelCauseFunc
	lastStream int
	streamWG   sync.WaitGroup
	releasing  bool
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
