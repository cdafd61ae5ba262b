// Package glw wraps the few OpenGL calls glmul makes behind typed handles.
// Every function acts on the context current on the calling thread: call
// them only from the thread that owns the context.
package glw

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
)

type (
	// Buffer is a buffer object name.
	Buffer uint32
	// Program is a linked program object name.
	Program uint32
	// Query is a query object name.
	Query uint32
	// Fence is a sync object (glFenceSync).
	Fence uintptr
)

// ErrOutOfMemory is GL_OUT_OF_MEMORY.
var ErrOutOfMemory = errors.New("GL_OUT_OF_MEMORY")

// Init loads the GL functions through getProc. go-gl/gl keeps them in
// package variables, so the last Init wins; glvnd returns the same
// dispatching entry points through GLX and EGL, so contexts of both kinds
// work with either.
func Init(getProc func(string) unsafe.Pointer) error {
	if err := gl.InitWithProcAddrFunc(getProc); err != nil {
		return err
	}
	LoadNamed(getProc)
	return nil
}

// String returns glGetString(name).
func String(name uint32) string {
	p := gl.GetString(name)
	if p == nil {
		return ""
	}
	return gl.GoStr(p)
}

// Strings of the current context.
func Vendor() string      { return String(gl.VENDOR) }
func Renderer() string    { return String(gl.RENDERER) }
func Version() string     { return String(gl.VERSION) }
func GLSLVersion() string { return String(gl.SHADING_LANGUAGE_VERSION) }

// ParseVersion reads "major.minor" from the start of a GL_VERSION string
// ("4.5 (Core Profile) Mesa 22.3.6", "4.3.0 NVIDIA 580.159.04"), skipping an
// "OpenGL ES " prefix.
func ParseVersion(s string) (major, minor int, ok bool) {
	s = strings.TrimPrefix(s, "OpenGL ES ")
	f := strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == ' ' })
	if len(f) < 2 {
		return 0, 0, false
	}
	maj, err1 := strconv.Atoi(f[0])
	min, err2 := strconv.Atoi(f[1])
	return maj, min, err1 == nil && err2 == nil
}

// Integer returns glGetIntegerv(name).
func Integer(name uint32) int {
	var v int32
	gl.GetIntegerv(name, &v)
	return int(v)
}

// IntegerAt returns glGetIntegeri_v(name, i).
func IntegerAt(name uint32, i uint32) int {
	var v int32
	gl.GetIntegeri_v(name, i, &v)
	return int(v)
}

// Integer64 returns glGetInteger64v(name).
func Integer64(name uint32) int64 {
	var v int64
	gl.GetInteger64v(name, &v)
	return v
}

// Limits of compute on the current context.
type Limits struct {
	MaxWorkGroupCount       [3]int
	MaxWorkGroupSize        [3]int
	MaxWorkGroupInvocations int
	MaxSharedMemory         int
	MaxSSBOBlockSize        int64
	MaxSSBOBindings         int
	SSBOOffsetAlignment     int
	TimerBits               int
	// MaxTextureBufferTexels and TextureBufferOffsetAlignment bound the
	// buffer textures that kernels reading through textures view.
	MaxTextureBufferTexels       int64
	TextureBufferOffsetAlignment int
}

// QueryLimits reads the compute limits.
func QueryLimits() Limits {
	var l Limits
	for i := uint32(0); i < 3; i++ {
		l.MaxWorkGroupCount[i] = IntegerAt(gl.MAX_COMPUTE_WORK_GROUP_COUNT, i)
		l.MaxWorkGroupSize[i] = IntegerAt(gl.MAX_COMPUTE_WORK_GROUP_SIZE, i)
	}
	l.MaxWorkGroupInvocations = Integer(gl.MAX_COMPUTE_WORK_GROUP_INVOCATIONS)
	l.MaxSharedMemory = Integer(gl.MAX_COMPUTE_SHARED_MEMORY_SIZE)
	l.MaxSSBOBlockSize = Integer64(gl.MAX_SHADER_STORAGE_BLOCK_SIZE)
	l.MaxSSBOBindings = Integer(gl.MAX_SHADER_STORAGE_BUFFER_BINDINGS)
	l.SSBOOffsetAlignment = Integer(gl.SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT)
	l.MaxTextureBufferTexels = int64(Integer(gl.MAX_TEXTURE_BUFFER_SIZE))
	l.TextureBufferOffsetAlignment = Integer(gl.TEXTURE_BUFFER_OFFSET_ALIGNMENT)
	return l
}

// TimerBits returns GL_QUERY_COUNTER_BITS of GL_TIME_ELAPSED: 0 for no
// timer. Desktop OpenGL only (OpenGL ES has no GL_TIME_ELAPSED in core).
func TimerBits() int {
	var bits int32
	gl.GetQueryiv(gl.TIME_ELAPSED, gl.QUERY_COUNTER_BITS, &bits)
	return int(bits)
}

// ClearErrors drains glGetError.
func ClearErrors() {
	for i := 0; i < 16 && gl.GetError() != gl.NO_ERROR; i++ {
	}
}

// CheckError returns the pending GL errors as one error, or nil. An
// out-of-memory error matches ErrOutOfMemory.
func CheckError(what string) error {
	var names []string
	oom := false
	for i := 0; i < 16; i++ {
		e := gl.GetError()
		if e == gl.NO_ERROR {
			break
		}
		if e == gl.OUT_OF_MEMORY {
			oom = true
		}
		names = append(names, errorName(e))
	}
	if len(names) == 0 {
		return nil
	}
	err := fmt.Errorf("%s: %s", what, strings.Join(names, ", "))
	if oom {
		err = fmt.Errorf("%s: %w", what, ErrOutOfMemory)
	}
	return err
}

func errorName(e uint32) string {
	switch e {
	case gl.INVALID_ENUM:
		return "GL_INVALID_ENUM"
	case gl.INVALID_VALUE:
		return "GL_INVALID_VALUE"
	case gl.INVALID_OPERATION:
		return "GL_INVALID_OPERATION"
	case gl.INVALID_FRAMEBUFFER_OPERATION:
		return "GL_INVALID_FRAMEBUFFER_OPERATION"
	case gl.OUT_OF_MEMORY:
		return "GL_OUT_OF_MEMORY"
	}
	return fmt.Sprintf("GL error 0x%x", e)
}

// NewStorageBuffer creates a shader storage buffer of size bytes holding
// data (which may be nil: contents undefined). usage is a GL usage hint:
// StaticDraw for inputs, StaticRead for outputs. ok is false when the
// driver did not allocate it (out of memory): the buffer's size is then
// not size, which is read back instead of calling glGetError, so that a
// host's error flags stay the host's. A failed buffer is deleted.
func NewStorageBuffer(size int, data unsafe.Pointer, usage uint32) (b Buffer, ok bool) {
	return newBuffer(size, func(target uint32) { gl.BufferData(target, size, data, usage) })
}

// newBuffer generates a buffer, lets alloc give it storage while it is
// bound to GL_COPY_WRITE_BUFFER, and checks that it got size bytes (a
// refused allocation leaves it empty); a failed buffer is deleted.
func newBuffer(size int, alloc func(target uint32)) (Buffer, bool) {
	var name uint32
	gl.GenBuffers(1, &name)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, name)
	alloc(gl.COPY_WRITE_BUFFER)
	var got int64
	gl.GetBufferParameteri64v(gl.COPY_WRITE_BUFFER, gl.BUFFER_SIZE, &got)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, 0)
	b := Buffer(name)
	if got != int64(size) {
		b.Release()
		return 0, false
	}
	return b, true
}

// Usage hints.
const (
	StaticDraw = gl.STATIC_DRAW
	StaticRead = gl.STATIC_READ
	StreamDraw = gl.STREAM_DRAW
	StreamRead = gl.STREAM_READ
)

// Read copies size bytes from offset into dst (glGetBufferSubData).
func (b Buffer) Read(offset, size int, dst unsafe.Pointer) {
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, uint32(b))
	gl.GetBufferSubData(gl.SHADER_STORAGE_BUFFER, offset, size, dst)
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, 0)
}

// BindStorage binds b to shader storage binding point index.
func (b Buffer) BindStorage(index uint32) {
	gl.BindBufferBase(gl.SHADER_STORAGE_BUFFER, index, uint32(b))
}

// BindStorageRange binds size bytes of b from offset to shader storage
// binding point index; offset must be a multiple of
// GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT (Limits.SSBOOffsetAlignment).
func (b Buffer) BindStorageRange(index uint32, offset, size int64) {
	gl.BindBufferRange(gl.SHADER_STORAGE_BUFFER, index, uint32(b), int(offset), int(size))
}

// Release deletes the buffer; the zero Buffer is ignored.
func (b *Buffer) Release() {
	if *b != 0 {
		n := uint32(*b)
		gl.DeleteBuffers(1, &n)
		*b = 0
	}
}

// CompileError is a compute shader that failed to compile or link.
type CompileError struct {
	File   string // the shader's file name
	Log    string // the driver's trimmed info log
	Source string // the source, for verbose reports
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("compiling %s: %s", e.File, e.Log)
}

// NumberedSource returns the source with line numbers, as drivers count them.
func (e *CompileError) NumberedSource() string {
	var sb strings.Builder
	for i, line := range strings.Split(e.Source, "\n") {
		fmt.Fprintf(&sb, "%4d  %s\n", i+1, line)
	}
	return sb.String()
}

// NewComputeProgram compiles and links a compute shader.
func NewComputeProgram(file, source string) (Program, error) {
	sh := gl.CreateShader(gl.COMPUTE_SHADER)
	if sh == 0 {
		return 0, fmt.Errorf("glCreateShader(GL_COMPUTE_SHADER) failed: %v", CheckError("create shader"))
	}
	defer gl.DeleteShader(sh)
	csrc, free := gl.Strs(source + "\x00")
	gl.ShaderSource(sh, 1, csrc, nil)
	free()
	gl.CompileShader(sh)
	var status int32
	gl.GetShaderiv(sh, gl.COMPILE_STATUS, &status)
	if status == gl.FALSE {
		return 0, &CompileError{File: file, Log: shaderLog(sh), Source: source}
	}
	p := gl.CreateProgram()
	// Keep the linked binary retrievable (Program.Binary) on drivers that
	// need the hint.
	gl.ProgramParameteri(p, gl.PROGRAM_BINARY_RETRIEVABLE_HINT, gl.TRUE)
	gl.AttachShader(p, sh)
	gl.LinkProgram(p)
	gl.DetachShader(p, sh)
	gl.GetProgramiv(p, gl.LINK_STATUS, &status)
	if status == gl.FALSE {
		log := programLog(p)
		gl.DeleteProgram(p)
		return 0, &CompileError{File: file, Log: "link: " + log, Source: source}
	}
	return Program(p), nil
}

func shaderLog(sh uint32) string { return infoLog(sh, gl.GetShaderiv, gl.GetShaderInfoLog) }
func programLog(p uint32) string { return infoLog(p, gl.GetProgramiv, gl.GetProgramInfoLog) }

// infoLog reads a shader's or program's info log, trimmed.
func infoLog(obj uint32, getiv func(uint32, uint32, *int32), getLog func(uint32, int32, *int32, *uint8)) string {
	var n int32
	getiv(obj, gl.INFO_LOG_LENGTH, &n)
	if n <= 1 {
		return "(no info log)"
	}
	buf := make([]byte, n)
	getLog(obj, n, nil, &buf[0])
	return strings.TrimSpace(strings.TrimRight(string(buf), "\x00"))
}

// LoadProgram makes a program from a binary that Binary returned, on the
// same driver: ok is false, and no program is left, where the driver
// refuses it (another driver's, a changed driver, a damaged file); the
// caller then compiles the source. GL errors it raised are cleared.
func LoadProgram(format uint32, data []byte) (_ Program, ok bool) {
	if len(data) == 0 {
		return 0, false
	}
	p := gl.CreateProgram()
	gl.ProgramParameteri(p, gl.PROGRAM_BINARY_RETRIEVABLE_HINT, gl.TRUE)
	gl.ProgramBinary(p, format, unsafe.Pointer(&data[0]), int32(len(data)))
	var status int32
	gl.GetProgramiv(p, gl.LINK_STATUS, &status)
	for gl.GetError() != gl.NO_ERROR { // GL_INVALID_ENUM for an unknown format
	}
	if status == gl.FALSE {
		gl.DeleteProgram(p)
		return 0, false
	}
	return Program(p), true
}

// Binary returns the driver's program binary (glGetProgramBinary) and its
// format; nil where the driver keeps none. NVIDIA's holds the program's
// assembly as text.
func (p Program) Binary() (format uint32, data []byte) {
	var n int32
	gl.GetProgramiv(uint32(p), gl.PROGRAM_BINARY_LENGTH, &n)
	if n <= 0 {
		return 0, nil
	}
	data = make([]byte, n)
	var got int32
	gl.GetProgramBinary(uint32(p), n, &got, &format, unsafe.Pointer(&data[0]))
	return format, data[:got]
}

// Use makes p the current program.
func (p Program) Use() { gl.UseProgram(uint32(p)) }

// Uniform returns the location of a uniform, −1 if the program has none.
func (p Program) Uniform(name string) int32 {
	return gl.GetUniformLocation(uint32(p), gl.Str(name+"\x00"))
}

// SetUint sets a uint uniform of the current program; location −1 is ignored.
func SetUint(location int32, v uint32) { gl.Uniform1ui(location, v) }

// Release deletes the program; the zero Program is ignored.
func (p *Program) Release() {
	if *p != 0 {
		gl.DeleteProgram(uint32(*p))
		*p = 0
	}
}

// Dispatch launches x×y work groups of the current program.
func Dispatch(x, y int) { gl.DispatchCompute(uint32(x), uint32(y), 1) }

// BarrierBufferRead makes shader writes visible to glGetBufferSubData.
func BarrierBufferRead() { gl.MemoryBarrier(gl.BUFFER_UPDATE_BARRIER_BIT) }

// Finish waits for all commands to complete (glFinish).
func Finish() { gl.Finish() }

// Flush sends queued commands to the GPU (glFlush).
func Flush() { gl.Flush() }

// NewQuery creates a query object.
func NewQuery() Query {
	var q uint32
	gl.GenQueries(1, &q)
	return Query(q)
}

// BeginTimeElapsed starts a GL_TIME_ELAPSED query.
func (q Query) BeginTimeElapsed() { gl.BeginQuery(gl.TIME_ELAPSED, uint32(q)) }

// EndTimeElapsed ends the running GL_TIME_ELAPSED query.
func EndTimeElapsed() { gl.EndQuery(gl.TIME_ELAPSED) }

// Timestamp records the GPU's time once the commands before it are done
// (glQueryCounter GL_TIMESTAMP); Nanoseconds reads it.
func (q Query) Timestamp() { gl.QueryCounter(uint32(q), gl.TIMESTAMP) }

// Nanoseconds waits for the query's result and returns it.
func (q Query) Nanoseconds() uint64 {
	var ns uint64
	gl.GetQueryObjectui64v(uint32(q), gl.QUERY_RESULT, &ns)
	return ns
}

// Release deletes the query; the zero Query is ignored.
func (q *Query) Release() {
	if *q != 0 {
		n := uint32(*q)
		gl.DeleteQueries(1, &n)
		*q = 0
	}
}

// NewFence inserts a fence after the commands issued so far.
func NewFence() Fence { return Fence(gl.FenceSync(gl.SYNC_GPU_COMMANDS_COMPLETE, 0)) }

// Signaled reports whether the fence has passed, waiting up to timeoutNs.
func (f Fence) Signaled(timeoutNs uint64) bool {
	r := gl.ClientWaitSync(uintptr(f), gl.SYNC_FLUSH_COMMANDS_BIT, timeoutNs)
	return r == gl.ALREADY_SIGNALED || r == gl.CONDITION_SATISFIED || r == gl.WAIT_FAILED
}

// Done reports whether the fence has passed, without waiting and without
// glClientWaitSync (glGetSynciv): a poll that an engine's frame can afford.
// The fence must have been flushed.
func (f Fence) Done() bool {
	var v int32
	gl.GetSynciv(uintptr(f), gl.SYNC_STATUS, 1, nil, &v)
	return v == gl.SIGNALED
}

// Release deletes the fence; the zero Fence is ignored.
func (f *Fence) Release() {
	if *f != 0 {
		gl.DeleteSync(uintptr(*f))
		*f = 0
	}
}

// HasExtension reports whether the current context lists extension name
// (glGetStringi over GL_NUM_EXTENSIONS).
func HasExtension(name string) bool {
	n := Integer(gl.NUM_EXTENSIONS)
	for i := 0; i < n; i++ {
		if p := gl.GetStringi(gl.EXTENSIONS, uint32(i)); p != nil && gl.GoStr(p) == name {
			return true
		}
	}
	return false
}

// Mapping access for NewMappedBuffer.
const (
	MapRead      = gl.MAP_READ_BIT
	MapWrite     = gl.MAP_WRITE_BIT
	MapReadWrite = gl.MAP_READ_BIT | gl.MAP_WRITE_BIT
)

// NewMappedBuffer creates an immutable buffer of size bytes
// (glBufferStorage as st says: StorageCore or StorageEXT) in host memory, mapped
// persistently and coherently with access (MapRead, MapWrite or
// MapReadWrite), and returns it with its mapping; ok is false if the
// driver refused either.
func NewMappedBuffer(size int, access uint32, st Storage) (b Buffer, p unsafe.Pointer, ok bool) {
	flags := uint32(gl.MAP_PERSISTENT_BIT|gl.MAP_COHERENT_BIT) | access
	var name uint32
	gl.GenBuffers(1, &name)
	b = Buffer(name)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, name)
	// GL_CLIENT_STORAGE_BIT: host memory. On NVIDIA it cut the first
	// product's staging cost; later products ran as fast either way
	// (docs/PERFORMANCE.md, "The data path: host matrices to the GPU and back").
	st.bufferStorage(gl.COPY_WRITE_BUFFER, size, nil, flags|gl.CLIENT_STORAGE_BIT)
	p = gl.MapBufferRange(gl.COPY_WRITE_BUFFER, 0, size, flags)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, 0)
	if p == nil {
		b.Release()
		return 0, nil, false
	}
	return b, p, true
}

// Map maps size bytes of b from offset for writing (the range's old
// contents discarded) or reading, until Unmap; nil if the driver refused.
func (b Buffer) Map(offset, size int, write bool) unsafe.Pointer {
	access := uint32(gl.MAP_READ_BIT)
	if write {
		access = gl.MAP_WRITE_BIT | gl.MAP_INVALIDATE_RANGE_BIT
	}
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, uint32(b))
	p := gl.MapBufferRange(gl.COPY_WRITE_BUFFER, offset, size, access)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, 0)
	return p
}

// Unmap ends b's mapping; false if its contents were lost (the driver may
// say so after a display mode change) and must be written again.
func (b Buffer) Unmap() bool {
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, uint32(b))
	ok := gl.UnmapBuffer(gl.COPY_WRITE_BUFFER)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, 0)
	return ok
}

// CopyTo queues a GPU copy of size bytes from b at srcOffset to dst at
// dstOffset (glCopyBufferSubData).
func (b Buffer) CopyTo(dst Buffer, srcOffset, dstOffset, size int) {
	gl.BindBuffer(gl.COPY_READ_BUFFER, uint32(b))
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, uint32(dst))
	gl.CopyBufferSubData(gl.COPY_READ_BUFFER, gl.COPY_WRITE_BUFFER, srcOffset, dstOffset, size)
	gl.BindBuffer(gl.COPY_READ_BUFFER, 0)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, 0)
}

// NewDeviceBuffer creates a buffer of size bytes for the GPU's own use
// (no host access: glBufferStorage with no flags where the driver has it,
// st not StorageNone, which keeps it in device memory; else
// glBufferData). ok as for NewStorageBuffer.
func NewDeviceBuffer(size int, st Storage) (b Buffer, ok bool) {
	if st == StorageNone {
		return NewStorageBuffer(size, nil, gl.DYNAMIC_COPY)
	}
	return newBuffer(size, func(target uint32) { st.bufferStorage(target, size, nil, 0) })
}
