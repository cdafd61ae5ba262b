// Package staging moves matrices between Go memory and GPU buffers
// through staging buffers in host-visible memory (Stager), and keeps the
// device buffers of one host product for the next (Pool).
//
// # Threading
//
// Every method makes GL calls: call it on the thread where the device's
// context is current (the device thread). A Stager's host copies run on
// goroutines of its own, which make no GL call.
package staging

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/errs"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/trace"
)

// Stager moves matrices between Go memory and GPU buffers through staging
// buffers in host-visible memory, a chunk of whole rows at a time, two
// buffers each way, so that the host copies one chunk (on several
// goroutines) while the GPU copies the other. Where the driver has
// glBufferStorage (GL 4.4, ARB_buffer_storage; ES's EXT_buffer_storage)
// and Persistent is set, the staging buffers are mapped once,
// persistently and coherently; otherwise each chunk is mapped with
// glMapBufferRange and unmapped (a 4.3 driver). Every method runs on the
// device thread.
type Stager struct {
	// Storage: how the driver offers glBufferStorage (glw.StorageNone:
	// not at all), used for the GPU's own buffers (device memory)
	// whatever the staging; Persistent: the staging buffers are mapped
	// persistently.
	Storage    glw.Storage
	Persistent bool
	Bytes      int // of each staging buffer
	Workers    int // host copy goroutines
	up, down   [2]slotBuf
	// CopiedIn and CopiedOut sum the wall time of the host's copies into
	// and out of the staging buffers: the host's busy time in transfers.
	CopiedIn, CopiedOut time.Duration
	// upNext is the staging buffer the next upload chunk goes through:
	// uploads take turns across calls, so that back-to-back small uploads
	// find the other buffer free rather than wait for their own last copy.
	upNext int
	// Waits counts the times slot had to wait for the GPU (tests).
	Waits int
}

// New returns a Stager of staging buffers of bytes each (made on first
// use), storage being how the driver offers glBufferStorage and persistent
// whether to map them persistently (only where storage is not
// glw.StorageNone), with a copy goroutine a CPU up to maxCopyWorkers.
func New(bytes int, storage glw.Storage, persistent bool) *Stager {
	return &Stager{Bytes: bytes, Workers: min(runtime.GOMAXPROCS(0), maxCopyWorkers), Storage: storage,
		Persistent: persistent && storage != glw.StorageNone}
}

// slotBuf is one staging buffer.
type slotBuf struct {
	buf   glw.Buffer
	size  int            // bytes
	ptr   unsafe.Pointer // the persistent mapping; nil if mapped per use
	fence glw.Fence      // the GPU's last copy from or to buf; 0 if none
}

// maxCopyWorkers caps the host copy goroutines (GOMAXPROCS below it): a
// streamed pass ran faster with 16 than with 8 on a 16-CPU host
// (docs/PERFORMANCE.md, "Whole tiles at the edges, buffer textures, one
// wave under a wave"; before streamed passes 16 had measured no better
// than 8: "Bands, copy goroutines and -mapped").
const maxCopyWorkers = 16

// DefaultBytes is the size of each staging buffer where Options.StagingBytes
// is zero: large enough that a chunk's fixed costs (a fence, a copy
// command, waking the copy goroutines) are small against its transfer,
// small enough that two up and two down stay modest in host-visible
// memory.
const DefaultBytes = 32 << 20

// slot returns staging buffer i of one direction holding at least need
// bytes, after the GPU's last copy through it: polled first, waited for
// only if it is still to come. Buffers are made on first use as large as
// the transfer needs (up to the Stager's size, so small products pin
// little memory) and grown when a larger one comes.
func (s *Stager) slot(slots *[2]slotBuf, i int, write bool, need int) (*slotBuf, error) {
	if need > s.Bytes { // no caller may get a buffer shorter than it asked for
		return nil, fmt.Errorf("%w: %s through a staging buffer of %s; raise Options.StagingBytes",
			errs.TooLarge, errs.FormatBytes(float64(need)), errs.FormatBytes(float64(s.Bytes)))
	}
	sl := &slots[i]
	if sl.fence != 0 {
		if !sl.fence.Done() {
			s.Waits++
			sl.fence.Signaled(^uint64(0))
		}
		sl.fence.Release()
	}
	if sl.buf != 0 && sl.size >= need {
		return sl, nil
	}
	sl.buf.Release()
	size := min(s.Bytes, roundUp(need, 1<<20))
	var ok bool
	if s.Persistent {
		access := uint32(glw.MapRead)
		if write {
			access = glw.MapWrite
		}
		sl.buf, sl.ptr, ok = glw.NewMappedBuffer(size, access, s.Storage)
	} else {
		usage := uint32(glw.StreamDraw)
		if !write {
			usage = glw.StreamRead
		}
		sl.buf, ok = glw.NewStorageBuffer(size, nil, usage)
	}
	if !ok {
		sl.size = 0
		return nil, fmt.Errorf("%w: the driver could not allocate a %s staging buffer", errs.OutOfMemory, errs.FormatBytes(float64(size)))
	}
	sl.size = size
	return sl, nil
}

// UpSlot returns upload staging buffer i (0 or 1) holding at least need
// bytes, after the GPU's last copy from it, and its persistent mapping
// (nil where buffers are mapped per use), for a caller that fills it
// itself (CopyIn) and copies it on the GPU.
func (s *Stager) UpSlot(i, need int) (glw.Buffer, unsafe.Pointer, error) {
	sl, err := s.slot(&s.up, i, true, need)
	if err != nil {
		return 0, nil, err
	}
	return sl.buf, sl.ptr, nil
}

// DownSlot is UpSlot for download staging buffer i, which the caller
// copies into on the GPU and reads through DownMapping (CopyOut).
func (s *Stager) DownSlot(i, need int) (glw.Buffer, unsafe.Pointer, error) {
	sl, err := s.slot(&s.down, i, false, need)
	if err != nil {
		return 0, nil, err
	}
	return sl.buf, sl.ptr, nil
}

// DownMapping is the persistent mapping of download staging buffer i,
// nil where buffers are mapped per use.
func (s *Stager) DownMapping(i int) unsafe.Pointer { return s.down[i].ptr }

// Prepare makes the four staging buffers at full size.
func (s *Stager) Prepare() {
	for i := 0; i < 2; i++ {
		s.slot(&s.up, i, true, s.Bytes)
		s.slot(&s.down, i, false, s.Bytes)
	}
}

// chunking is how rows of stride floats travel through the staging
// buffers: as many whole rows a chunk as fill one, or, where a row is
// larger than one, each row in pieces of its first width floats (what
// the transfer moves of it), a piece a chunk.
type chunking struct {
	rows, stride int
	width        int // floats of a row moved where it goes in pieces
	per          int // whole rows a chunk; 0: rows in pieces
	piece        int // floats a piece
	pieces       int // pieces a row
}

// chunks plans the chunks of rows rows of stride floats, width of each
// moved where a row goes in pieces.
func (s *Stager) chunks(rows, stride, width int) chunking {
	c := chunking{rows: rows, stride: stride, width: width, per: s.Bytes / (4 * stride)}
	if c.per == 0 {
		c.piece = max(1, s.Bytes/16*4) // whole vec4s where the buffer holds one
		c.pieces = (width + c.piece - 1) / c.piece
	}
	return c
}

// count is the number of chunks.
func (c chunking) count() int {
	if c.per > 0 {
		return (c.rows + c.per - 1) / c.per
	}
	return c.rows * c.pieces
}

// chunk returns chunk i: rows [r0, r1), of whose strides it holds floats
// [c0, c0+n) (n floats in all for a piece, (r1−r0)·stride for whole rows).
func (c chunking) chunk(i int) (r0, r1, c0, n int) {
	if c.per > 0 {
		r0 = i * c.per
		r1 = min(r0+c.per, c.rows)
		return r0, r1, 0, (r1 - r0) * c.stride
	}
	r0, c0 = i/c.pieces, i%c.pieces*c.piece
	return r0, r0 + 1, c0, min(c.piece, c.width-c0)
}

// View is where a matrix lies in a GPU buffer: from float Off, rows
// Stride floats apart. KeepGaps: the floats between rows are someone
// else's and must not be written (a host's buffer); otherwise they are
// padding that Upload zeroes.
type View struct {
	Buf      glw.Buffer
	Off      int
	Stride   int
	KeepGaps bool
}

// Upload copies src into dst's rows: a chunk of rows a GPU copy, or one
// copy a row where the gaps must be kept.
func (s *Stager) Upload(dst View, src blas32.General) error {
	stride := dst.Stride
	width := stride // what a row in pieces moves: the padding too, unless it is kept
	if dst.KeepGaps {
		width = src.Cols
	}
	ch := s.chunks(src.Rows, stride, width)
	for i := range ch.count() {
		r0, r1, c0, n := ch.chunk(i)
		sl, err := s.slot(&s.up, s.upNext%2, true, 4*n)
		s.upNext++
		if err != nil {
			return err
		}
		ptr := sl.ptr
		if ptr == nil {
			if ptr = sl.buf.Map(0, 4*n, true); ptr == nil {
				return fmt.Errorf("%w: glMapBufferRange refused a staging buffer", errs.Driver)
			}
		}
		trace.Stage("upload chunk: staging buffer free")
		if ch.per == 0 {
			s.copyPieceIn(unsafe.Slice((*float32)(ptr), n), src, r0, c0)
		} else {
			s.CopyIn(unsafe.Slice((*float32)(ptr), n), src, r0, r1, stride)
		}
		trace.Stage("upload chunk: copied in by the host")
		if sl.ptr == nil && !sl.buf.Unmap() {
			return fmt.Errorf("%w: a staging buffer's contents were lost while mapped", errs.Driver)
		}
		if ch.per == 0 { // a piece of a row, padding zeroed unless kept
			sl.buf.CopyTo(dst.Buf, 0, 4*(dst.Off+r0*stride+c0), 4*n)
		} else if dst.KeepGaps && stride > src.Cols {
			for i := 0; i < r1-r0; i++ {
				sl.buf.CopyTo(dst.Buf, 4*i*stride, 4*(dst.Off+(r0+i)*stride), 4*src.Cols)
			}
		} else {
			// Whole rows, padding included: the kernels read it, so it
			// must be the zeros written above, not what new device memory
			// held.
			sl.buf.CopyTo(dst.Buf, 0, 4*(dst.Off+r0*stride), 4*n)
		}
		sl.fence = glw.NewFence()
		glw.Flush()
	}
	return nil
}

// Download copies the rows of src into dst (dst.Cols floats a row). The
// GPU copies the next chunk while the host copies out the last.
func (s *Stager) Download(dst blas32.General, src View) error {
	pd, err := s.StartDownload(dst, src)
	if err != nil {
		return err
	}
	return pd.Finish()
}

// PendingDownload is a download whose first GPU copies are queued; Finish
// waits for them and copies out.
type PendingDownload struct {
	s      *Stager
	dst    blas32.General
	src    View
	ch     chunking
	chunks int
}

// StartDownload queues the GPU copies of src's first two chunks into the
// staging buffers and returns without waiting: a caller can queue more
// GPU work (the next product) before Finish waits for the copies.
func (s *Stager) StartDownload(dst blas32.General, src View) (*PendingDownload, error) {
	glw.BarrierBufferRead() // shader writes to src before the copies
	ch := s.chunks(dst.Rows, src.Stride, dst.Cols)
	pd := &PendingDownload{s: s, dst: dst, src: src, ch: ch, chunks: ch.count()}
	for c := 0; c < min(2, pd.chunks); c++ {
		if err := pd.issue(c); err != nil {
			return nil, err
		}
	}
	return pd, nil
}

// issue queues the GPU copy of chunk c into staging buffer c%2.
func (pd *PendingDownload) issue(c int) error {
	stride := pd.src.Stride
	r0, r1, c0, n := pd.ch.chunk(c)
	sl, err := pd.s.slot(&pd.s.down, c%2, false, 4*n)
	if err != nil {
		return err
	}
	size := (r1-r0-1)*stride + pd.dst.Cols // whole rows: not the last one's padding
	if pd.ch.per == 0 {
		size = n
	}
	pd.src.Buf.CopyTo(sl.buf, 4*(pd.src.Off+r0*stride+c0), 0, 4*size)
	sl.fence = glw.NewFence()
	glw.Flush()
	return nil
}

// Finish copies every chunk out as the GPU delivers it, queueing the
// chunk after next into each staging buffer it frees.
func (pd *PendingDownload) Finish() error {
	s, dst, stride := pd.s, pd.dst, pd.src.Stride
	for c := 0; c < pd.chunks; c++ {
		sl := &s.down[c%2]
		sl.fence.Signaled(^uint64(0))
		sl.fence.Release()
		r0, r1, c0, n := pd.ch.chunk(c)
		ptr := sl.ptr
		if ptr == nil {
			if ptr = sl.buf.Map(0, 4*n, false); ptr == nil {
				return fmt.Errorf("%w: glMapBufferRange refused a staging buffer", errs.Driver)
			}
		}
		if in := unsafe.Slice((*float32)(ptr), n); pd.ch.per == 0 {
			s.copyPieceOut(dst.Data[r0*dst.Stride+c0:r0*dst.Stride+c0+n], in)
		} else {
			s.CopyOut(dst, in, r0, r1, stride)
		}
		if sl.ptr == nil && !sl.buf.Unmap() {
			return fmt.Errorf("%w: a staging buffer's contents were lost while mapped", errs.Driver)
		}
		if c+2 < pd.chunks {
			if err := pd.issue(c + 2); err != nil {
				return err
			}
		}
	}
	return nil
}

// Where a chunk's rows lie end to end both in the Go matrix and in the
// staging buffer (no padding: columns a multiple of 4), each copy
// goroutine copies its rows as one block rather than row by row: Go's
// copy uses non-temporal stores from 1 MiB on, which do not first read
// the destination's cache lines (docs/PERFORMANCE.md, "Streamed
// passes").

// CopyIn copies rows [r0, r1) of src into out, stride floats a row, the
// padding after src.Cols zeroed, on the copy goroutines.
func (s *Stager) CopyIn(out []float32, src blas32.General, r0, r1, stride int) {
	s.copying(&s.CopiedIn, r1-r0, func(i0, i1 int) {
		if src.Stride == stride && src.Cols == stride { // one block
			copy(out[i0*stride:i1*stride], src.Data[(r0+i0)*stride:(r0+i1)*stride])
			return
		}
		for i := i0; i < i1; i++ {
			row := out[i*stride : (i+1)*stride]
			copy(row, src.Data[(r0+i)*src.Stride:(r0+i)*src.Stride+src.Cols])
			clear(row[src.Cols:])
		}
	})
}

// CopyOut copies in, stride floats a row, into rows [r0, r1) of dst, on
// the copy goroutines.
func (s *Stager) CopyOut(dst blas32.General, in []float32, r0, r1, stride int) {
	s.copying(&s.CopiedOut, r1-r0, func(i0, i1 int) {
		if dst.Stride == stride && dst.Cols == stride { // one block
			copy(dst.Data[(r0+i0)*stride:(r0+i1)*stride], in[i0*stride:i1*stride])
			return
		}
		for i := i0; i < i1; i++ {
			copy(dst.Data[(r0+i)*dst.Stride:(r0+i)*dst.Stride+dst.Cols], in[i*stride:i*stride+dst.Cols])
		}
	})
}

// copyPieceIn copies floats [c0, c0+len(out)) of row r of src into out,
// those past src.Cols (the row's padding) zeroed, on the copy goroutines.
func (s *Stager) copyPieceIn(out []float32, src blas32.General, r, c0 int) {
	row := src.Data[r*src.Stride : r*src.Stride+src.Cols]
	have := max(0, min(len(out), src.Cols-c0))
	s.copying(&s.CopiedIn, have, func(i0, i1 int) { copy(out[i0:i1], row[c0+i0:c0+i1]) })
	clear(out[have:])
}

// copyPieceOut copies in into out, on the copy goroutines.
func (s *Stager) copyPieceOut(out, in []float32) {
	s.copying(&s.CopiedOut, len(out), func(i0, i1 int) { copy(out[i0:i1], in[i0:i1]) })
}

// copying runs s.parallel(n, f) and adds its wall time to *busy.
func (s *Stager) copying(busy *time.Duration, n int, f func(i0, i1 int)) {
	start := time.Now()
	s.parallel(n, f)
	*busy += time.Since(start)
}

// copyPieces is how many pieces per goroutine parallel cuts a copy
// into. Equal shares, one a goroutine, made a copy as slow as its slowest
// goroutine: where a CPU was busy with something else (the driver's
// threads, another process), every copy of the process took twice as
// long or more. Goroutines that take pieces in turn until none is left
// share the work out by what each gets done instead.
const copyPieces = 4

// parallel runs f over rows [0, n), cut into pieces that the Stager's
// goroutines and the calling thread take in turn; small jobs run on the
// calling thread.
func (s *Stager) parallel(n int, f func(i0, i1 int)) {
	w := min(s.Workers, n)
	if w <= 1 {
		f(0, n)
		return
	}
	pieces := min(n, copyPieces*w)
	var next atomic.Int64
	work := func() {
		for {
			p := int(next.Add(1) - 1)
			if p >= pieces {
				return
			}
			f(p*n/pieces, (p+1)*n/pieces)
		}
	}
	var wg sync.WaitGroup
	for g := 1; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// Release deletes the staging buffers (a persistent mapping goes with its
// buffer).
func (s *Stager) Release() {
	for _, slots := range []*[2]slotBuf{&s.up, &s.down} {
		for i := range slots {
			slots[i].fence.Release()
			slots[i].buf.Release()
		}
	}
}

// roundUp rounds x up to a multiple of align.
func roundUp(x, align int) int { return (x + align - 1) / align * align }
