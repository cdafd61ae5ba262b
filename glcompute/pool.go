package glcompute

import (
	"fmt"
	"slices"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// The Device keeps the device buffers of its last host product (Mul) for
// the next one: A, B and C, and A's transpose for a kernel that reads A
// transposed (keepBuffers).
//
// A product of the size of the last one (or smaller) then makes no new GPU
// memory, which made the library's tests on llvmpipe about twice as fast.
// It was first made for a slow product after a larger one, which it did
// not fix: that was the GPU's clock after idle (see measure.RampIdle in
// cmd/glmul; docs/PERFORMANCE.md, "Buffers kept between products" and
// "Figures from the library's comments"). The cost: the buffers of the
// last product stay allocated until the next product, a product in panels,
// a failed allocation, or Release.

// pooled is a device buffer kept for reuse.
type pooled struct {
	buf     glw.Buffer
	bytes   int
	storage glw.Storage
}

// takeBuffer returns a device buffer of at least bytes: the smallest kept
// one that is large enough, else a new one (after freeing the kept ones if
// the driver is out of memory). size is the buffer's real size. On the
// device thread.
func (d *Device) takeBuffer(bytes int, storage glw.Storage) (b pooled, ok bool) {
	best := -1
	for i, p := range d.pool {
		if p.bytes >= bytes && p.storage == storage && (best < 0 || p.bytes < d.pool[best].bytes) {
			best = i
		}
	}
	if best >= 0 {
		b = d.pool[best]
		d.pool = slices.Delete(d.pool, best, best+1)
		return b, true
	}
	b = pooled{bytes: bytes, storage: storage}
	if b.buf, ok = glw.NewDeviceBuffer(bytes, storage); !ok && len(d.pool) > 0 {
		d.drainPool()
		d.clearErrors() // the failure's GL_OUT_OF_MEMORY, which a success must not inherit
		b.buf, ok = glw.NewDeviceBuffer(bytes, storage)
	}
	if ok {
		if d.poolTex == nil {
			d.poolTex = map[glw.Buffer]glw.Texture{}
		}
		d.poolTex[b.buf] = 0
	}
	return b, ok
}

// wanted is a device buffer a host product takes (takeBuffers): where
// it goes, its bytes, and its name for errors.
type wanted struct {
	buf   *glw.Buffer
	bytes int
	name  string
}

// takeBuffers takes the buffers a host product (Mul's or Mul64's in one
// piece) wants from the device's pool, or creates them (device memory,
// never mapped, where the driver has glBufferStorage), appending each to
// held for keepBuffers. Where the product is capped
// (MulOptions.MaxGPUMemory) it empties the pool first: a cap counts that
// product's buffers only. On the device thread.
func (d *Device) takeBuffers(capped bool, held *[]pooled, bufs ...wanted) error {
	if capped {
		d.drainPool()
	}
	storage := d.stage().Storage
	for _, x := range bufs {
		b, ok := d.takeBuffer(x.bytes, storage)
		if !ok {
			return fmt.Errorf("%w: %s: the driver could not allocate %s", ErrOutOfMemory, x.name, formatBytes(float64(x.bytes)))
		}
		*x.buf = b.buf
		*held = append(*held, b)
	}
	return nil
}

// releasePooled deletes a buffer of the pool and the buffer texture that
// views it, if any: a deleted buffer's name may come back for another
// buffer, which the texture must not be taken to view.
func (d *Device) releasePooled(p pooled) {
	t := d.poolTex[p.buf]
	t.Release()
	delete(d.poolTex, p.buf)
	p.buf.Release()
}

// keepBuffers returns a product's buffers to the pool, deleting the
// oldest kept ones beyond that product's count: the pool holds one
// product's buffers. Zero buffers are ignored. On the device thread.
func (d *Device) keepBuffers(bs []pooled) {
	n := 0
	for _, b := range bs {
		if b.buf != 0 {
			d.pool = append(d.pool, b)
			n++
		}
	}
	for len(d.pool) > n {
		d.releasePooled(d.pool[0])
		d.pool = d.pool[1:]
	}
}

// drainPool deletes every kept buffer. On the device thread.
func (d *Device) drainPool() {
	for _, p := range d.pool {
		d.releasePooled(p)
	}
	d.pool = nil
}
