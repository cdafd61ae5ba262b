package glw

import (
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
)

// State is the GL state glmul's calls touch: the current program, the
// generic shader storage and copy buffer bindings, and the indexed shader storage
// bindings 0…len(Indexed)-1 (buffer, start, size). A borrowed context gets
// it back exactly (Gio's Shared mode).
type State struct {
	Program   int32
	SSBO      int32
	CopyRead  int32 // GL_COPY_READ_BUFFER and GL_COPY_WRITE_BUFFER: staging
	CopyWrite int32 // copies bind buffers there (saved unless NoCopies)
	Indexed   []IndexedBinding
	// NoCopies: CopyRead and CopyWrite were not saved (SaveStorageState),
	// and Restore leaves them alone.
	NoCopies bool

	// Texture state, saved only once SaveTextures is called (a kernel that
	// reads through buffer textures is about to bind them): the active
	// unit and the buffer texture bound at units 0…len(TexBuffers)-1.
	texSaved      bool
	ActiveTexture int32
	TexBuffers    []int32
}

// IndexedBinding is one indexed buffer binding.
type IndexedBinding struct {
	Buffer      int32
	Start, Size int64
}

// SaveState reads the state for indexed bindings 0…n-1.
func SaveState(n int) State {
	s := SaveStorageState(n)
	s.NoCopies = false
	gl.GetIntegerv(gl.COPY_READ_BUFFER_BINDING, &s.CopyRead)
	gl.GetIntegerv(gl.COPY_WRITE_BUFFER_BINDING, &s.CopyWrite)
	return s
}

// SaveStorageState is SaveState without the copy buffer bindings, for
// calls that bind no buffer there (dispatches on resident buffers): two
// queries and two binds fewer on a borrowed context's every call.
func SaveStorageState(n int) State {
	s := State{NoCopies: true}
	gl.GetIntegerv(gl.CURRENT_PROGRAM, &s.Program)
	gl.GetIntegerv(gl.SHADER_STORAGE_BUFFER_BINDING, &s.SSBO)
	s.Indexed = make([]IndexedBinding, n)
	for i := range s.Indexed {
		b := &s.Indexed[i]
		gl.GetIntegeri_v(gl.SHADER_STORAGE_BUFFER_BINDING, uint32(i), &b.Buffer)
		if b.Buffer == 0 { // nothing bound: no range to read (a borrowed call's queries cost µs)
			continue
		}
		gl.GetInteger64i_v(gl.SHADER_STORAGE_BUFFER_START, uint32(i), &b.Start)
		gl.GetInteger64i_v(gl.SHADER_STORAGE_BUFFER_SIZE, uint32(i), &b.Size)
	}
	return s
}

// SaveTextures adds the active texture unit and the buffer textures bound
// at units 0…n-1 to s, unless it holds them already.
func (s *State) SaveTextures(n int) {
	if s.texSaved {
		return
	}
	s.texSaved = true
	gl.GetIntegerv(gl.ACTIVE_TEXTURE, &s.ActiveTexture)
	s.TexBuffers = make([]int32, n)
	for i := range s.TexBuffers {
		gl.ActiveTexture(gl.TEXTURE0 + uint32(i))
		gl.GetIntegerv(gl.TEXTURE_BINDING_BUFFER, &s.TexBuffers[i])
	}
	gl.ActiveTexture(uint32(s.ActiveTexture))
}

// Restore puts the state back. Binding a range with size 0 means the whole
// buffer was bound with glBindBufferBase.
func (s *State) Restore() {
	if s.texSaved {
		for i, t := range s.TexBuffers {
			gl.ActiveTexture(gl.TEXTURE0 + uint32(i))
			gl.BindTexture(gl.TEXTURE_BUFFER, uint32(t))
		}
		gl.ActiveTexture(uint32(s.ActiveTexture))
	}
	for i, b := range s.Indexed {
		if b.Buffer != 0 && b.Size > 0 {
			gl.BindBufferRange(gl.SHADER_STORAGE_BUFFER, uint32(i), uint32(b.Buffer), int(b.Start), int(b.Size))
		} else {
			gl.BindBufferBase(gl.SHADER_STORAGE_BUFFER, uint32(i), uint32(b.Buffer))
		}
	}
	// glBindBufferBase/Range also set the generic binding: restore it last.
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, uint32(s.SSBO))
	if !s.NoCopies {
		gl.BindBuffer(gl.COPY_READ_BUFFER, uint32(s.CopyRead))
		gl.BindBuffer(gl.COPY_WRITE_BUFFER, uint32(s.CopyWrite))
	}
	gl.UseProgram(uint32(s.Program))
}

// TimerBusy reports whether a GL_TIME_ELAPSED query is active (the host's),
// in which case glmul must not begin its own.
func TimerBusy() bool {
	var q int32
	gl.GetQueryiv(gl.TIME_ELAPSED, gl.CURRENT_QUERY, &q)
	return q != 0
}

// WriteAt copies size bytes from src into b at offset (glBufferSubData),
// through the copy-write target, leaving it unbound. Not the shader
// storage target: on NVIDIA 580.159.04 binding a buffer there while an
// earlier write to it is unflushed makes the next dispatch read the
// buffer's older contents (see NamedSize); the copy targets do not.
func (b Buffer) WriteAt(offset, size int, src unsafe.Pointer) {
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, uint32(b))
	gl.BufferSubData(gl.COPY_WRITE_BUFFER, offset, size, src)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, 0)
}

// Size returns the buffer's size in bytes.
func (b Buffer) Size() int64 {
	var v int64
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, uint32(b))
	gl.GetBufferParameteri64v(gl.SHADER_STORAGE_BUFFER, gl.BUFFER_SIZE, &v)
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, 0)
	return v
}

// IsBuffer reports whether name is a buffer object of the current context.
func IsBuffer(name uint32) bool { return gl.IsBuffer(name) }

// SetFloat sets a float uniform of the current program; location −1 is ignored.
func SetFloat(location int32, v float32) { gl.Uniform1f(location, v) }

// SetDouble sets a double uniform of the current program (OpenGL 4.0 or
// GL_ARB_gpu_shader_fp64); location −1 is ignored.
func SetDouble(location int32, v float64) { gl.Uniform1d(location, v) }

// BarrierAll makes shader writes visible to every later use of the memory:
// the host's draws (vertex, index, uniform, indirect), compute passes and
// buffer reads.
func BarrierAll() { gl.MemoryBarrier(gl.ALL_BARRIER_BITS) }

// BarrierStorage orders shader storage writes before later shader reads:
// storage loads and texel fetches, which the kernels reading A and B
// through buffer textures make (a transpose's T, say, read by the next
// band's kernel with no new binding between).
func BarrierStorage() { gl.MemoryBarrier(storageReads) }

// storageReads are the barrier bits of later reads by shaders.
const storageReads = gl.SHADER_STORAGE_BARRIER_BIT | gl.TEXTURE_FETCH_BARRIER_BIT

// clientMappedBufferBarrierBit is GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT (GL
// 4.4, ARB_buffer_storage, EXT_buffer_storage), which go-gl's 4.3 core
// profile does not define.
const clientMappedBufferBarrierBit = 0x00004000

// BarrierClientMapped makes shader writes to a persistently mapped buffer
// visible to the host once a fence after it has passed.
func BarrierClientMapped() { gl.MemoryBarrier(clientMappedBufferBarrierBit) }

// BarrierStorageClientMapped is BarrierStorage and BarrierClientMapped in
// one call.
func BarrierStorageClientMapped() {
	gl.MemoryBarrier(storageReads | clientMappedBufferBarrierBit)
}

// Dispatch3 launches x×y×z work groups of the current program.
func Dispatch3(x, y, z int) { gl.DispatchCompute(uint32(x), uint32(y), uint32(z)) }

// BarrierTextureFetch makes earlier shader writes visible to later texel
// fetches (GL_TEXTURE_FETCH_BARRIER_BIT).
func BarrierTextureFetch() { gl.MemoryBarrier(gl.TEXTURE_FETCH_BARRIER_BIT) }

// Texture is a texture object's name.
type Texture uint32

// NewTexture creates a texture object name; its first binding makes it a
// buffer texture (BindBuffer).
func NewTexture() Texture {
	var t uint32
	gl.GenTextures(1, &t)
	return Texture(t)
}

// BindBuffer binds t to texture unit unit as a buffer texture of RGBA32F
// texels viewing size bytes of buf from offset, which must be a multiple of
// GL_TEXTURE_BUFFER_OFFSET_ALIGNMENT (size 0: all of buf; buf 0 detaches
// t's buffer). It leaves unit active.
func (t Texture) BindBuffer(unit uint32, buf Buffer, offset, size int64) {
	t.bindBuffer(unit, buf, offset, size, gl.RGBA32F)
}

// BindBufferUint is BindBuffer with RGBA32UI texels: 16 bytes each read
// back bit for bit as four words (float64 kernels unpack them into two
// doubles).
func (t Texture) BindBufferUint(unit uint32, buf Buffer, offset, size int64) {
	t.bindBuffer(unit, buf, offset, size, gl.RGBA32UI)
}

func (t Texture) bindBuffer(unit uint32, buf Buffer, offset, size int64, format uint32) {
	gl.ActiveTexture(gl.TEXTURE0 + unit)
	gl.BindTexture(gl.TEXTURE_BUFFER, uint32(t))
	if size > 0 && buf != 0 {
		gl.TexBufferRange(gl.TEXTURE_BUFFER, format, uint32(buf), int(offset), int(size))
	} else {
		gl.TexBuffer(gl.TEXTURE_BUFFER, format, uint32(buf))
	}
}

// Bind binds t, a buffer texture, to texture unit unit, leaving unit
// active.
func (t Texture) Bind(unit uint32) {
	gl.ActiveTexture(gl.TEXTURE0 + unit)
	gl.BindTexture(gl.TEXTURE_BUFFER, uint32(t))
}

// ViewedBuffer binds t at texture unit unit and returns the buffer it
// views (0: none).
func (t Texture) ViewedBuffer(unit uint32) Buffer {
	gl.ActiveTexture(gl.TEXTURE0 + unit)
	gl.BindTexture(gl.TEXTURE_BUFFER, uint32(t))
	var b int32
	gl.GetTexLevelParameteriv(gl.TEXTURE_BUFFER, 0, gl.TEXTURE_BUFFER_DATA_STORE_BINDING, &b)
	return Buffer(b)
}

// Release deletes the texture; the zero Texture is ignored.
func (t *Texture) Release() {
	if *t != 0 {
		n := uint32(*t)
		gl.DeleteTextures(1, &n)
		*t = 0
	}
}
