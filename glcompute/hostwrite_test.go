package glcompute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// A host's glBufferSubData into a matrix it lent glmul must reach glmul's
// next product, whatever glmul did with the buffer before. Issue 22: on
// NVIDIA 580.159.04 (H100, EGL) the engine host's C = 0·A·B + 0.25·C gave
// 0.25 × C's contents from before the host's write. These tests fail
// there without the fixes (WrapBuffer binding the buffer to read its
// size; a product's dispatch not flushed), and can only pass on Mesa.

// hostArena is one engine buffer: A 37×53 (stride 54) at 3, B 53×29
// (stride 31) at 2005, C 37×29 (stride 32) at 3653, D 37×29 (stride 29)
// after C; every other float a sentinel. A and B are random.
type hostArena struct {
	buf              uint32
	floats           []float32 // what the buffer holds, as the host believes
	offA, offB, offC int
	offD             int
}

const (
	haM, haK, haN          = 37, 53, 29
	haLda, haLdb, haLdc    = 54, 31, 32
	haOffA, haOffB, haOffC = 3, 2005, 3653
)

func haSentinel(i int) float32 { return -1000.125 - float32(i%977) }

// newHostArena makes the buffer with glBufferData, as an engine does,
// through the copy-write target, and leaves nothing bound.
func newHostArena(rng *rand.Rand) *hostArena {
	h := &hostArena{offA: haOffA, offB: haOffB, offC: haOffC}
	h.offD = h.offC + (haM-1)*haLdc + haN + 7
	total := h.offD + (haM-1)*haN + haN + 9
	h.floats = make([]float32, total)
	for i := range h.floats {
		h.floats[i] = haSentinel(i)
	}
	for i := 0; i < haM; i++ {
		for j := 0; j < haK; j++ {
			h.floats[h.offA+i*haLda+j] = 2*rng.Float32() - 1
		}
	}
	for i := 0; i < haK; i++ {
		for j := 0; j < haN; j++ {
			h.floats[h.offB+i*haLdb+j] = 2*rng.Float32() - 1
		}
	}
	gl.GenBuffers(1, &h.buf)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, h.buf)
	gl.BufferData(gl.COPY_WRITE_BUFFER, 4*len(h.floats), unsafe.Pointer(&h.floats[0]), gl.DYNAMIC_DRAW)
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, 0)
	return h
}

// writeC is the host's own write of new values into C's elements (one
// glBufferSubData over C's span, gaps as they were).
func (h *hostArena) writeC(rng *rand.Rand) {
	span := (haM-1)*haLdc + haN
	for i := 0; i < haM; i++ {
		for j := 0; j < haN; j++ {
			h.floats[h.offC+i*haLdc+j] = 2*rng.Float32() - 1
		}
	}
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, h.buf)
	gl.BufferSubData(gl.COPY_WRITE_BUFFER, 4*h.offC, 4*span, unsafe.Pointer(&h.floats[h.offC]))
	gl.BindBuffer(gl.COPY_WRITE_BUFFER, 0)
}

func (h *hostArena) wrap(t *testing.T, d *Device, off, rows, cols, stride int) *Matrix {
	t.Helper()
	m, err := d.WrapBuffer(h.buf, off, rows, cols, stride)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// wrapABC wraps A, B and C where the arena holds them.
func (h *hostArena) wrapABC(t *testing.T, d *Device) (a, b, c *Matrix) {
	t.Helper()
	return h.wrap(t, d, h.offA, haM, haK, haLda), h.wrap(t, d, h.offB, haK, haN, haLdb), h.wrap(t, d, h.offC, haM, haN, haLdc)
}

// check waits for d's work, reads the whole buffer back as the host does
// and compares C's elements with want exactly and every other float with
// what the host believes the buffer holds.
func (h *hostArena) check(t *testing.T, d *Device, what string, want func(i, j int) float32) {
	t.Helper()
	f := d.Fence()
	if !f.Wait(30 * time.Second) {
		t.Fatalf("%s: fence did not pass", what)
	}
	f.Release()
	got := make([]float32, len(h.floats))
	gl.BindBuffer(gl.COPY_READ_BUFFER, h.buf)
	gl.GetBufferSubData(gl.COPY_READ_BUFFER, 0, 4*len(got), unsafe.Pointer(&got[0]))
	gl.BindBuffer(gl.COPY_READ_BUFFER, 0)
	bad, stale := 0, 0
	first := ""
	for idx, g := range got {
		w := h.floats[idx]
		d := idx - h.offC
		if i, j := d/haLdc, d%haLdc; d >= 0 && i < haM && j < haN {
			w = want(i, j)
			if g == 0.25*haSentinel(idx) {
				stale++
			}
		}
		if math.Float32bits(g) != math.Float32bits(w) {
			if first == "" {
				first = fmt.Sprintf("float %d = %v, want %v", idx, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d floats wrong (%d are 0.25 × C's contents before the host's write); first: %s", what, bad, stale, first)
	}
	for i := 0; i < haM; i++ { // the buffer now holds the product
		for j := 0; j < haN; j++ {
			h.floats[h.offC+i*haLdc+j] = got[h.offC+i*haLdc+j]
		}
	}
}

// TestHostWriteAfterWrap: buffer made, matrices wrapped, the host writes
// C, then C = 0·A·B + 0.25·C (the engine host's failing case, minimized).
// On the H100 this failed while WrapBuffer bound the buffer to read its
// size: the dispatch read C as glBufferData had left it.
func TestHostWriteAfterWrap(t *testing.T) {
	withBorrowedEGL(t, func(d *Device) {
		rng := rand.New(rand.NewPCG(22, 1))
		h := newHostArena(rng)
		defer gl.DeleteBuffers(1, &h.buf)
		a, b, c := h.wrapABC(t, d)
		for round, beta := range []float32{0.25, 1, 0.5} {
			h.writeC(rng)
			c0 := append([]float32(nil), h.floats...)
			if err := c.Gemm(blas.NoTrans, blas.NoTrans, 0, a, b, beta); err != nil {
				t.Fatal(err)
			}
			h.check(t, d, fmt.Sprintf("round %d, α = 0, β = %g", round, beta), func(i, j int) float32 {
				return beta * c0[h.offC+i*haLdc+j]
			})
		}
	})
}

// TestHostWriteAfterProduct: buffer made, then at once (nothing flushed)
// a product D = A·B in it, the host writes C, then C = 0·A·B + 0.25·C.
// On the H100 the second product read C as glBufferData had left it
// unless the first one's dispatch was flushed.
func TestHostWriteAfterProduct(t *testing.T) {
	withBorrowedEGL(t, func(d *Device) {
		rng := rand.New(rand.NewPCG(22, 2))
		h := newHostArena(rng)
		defer gl.DeleteBuffers(1, &h.buf)
		a, b, c := h.wrapABC(t, d)
		dm := h.wrap(t, d, h.offD, haM, haN, haN)
		if err := dm.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0); err != nil {
			t.Fatal(err)
		}
		h.writeC(rng)
		c0 := append([]float32(nil), h.floats...)
		if err := c.Gemm(blas.NoTrans, blas.NoTrans, 0, a, b, 0.25); err != nil {
			t.Fatal(err)
		}
		// D is a product: take what the GPU wrote there as the host's
		// belief, after checking it against float64.
		f := d.Fence()
		f.Wait(30 * time.Second)
		f.Release()
		got := make([]float32, haM*haN)
		gl.BindBuffer(gl.COPY_READ_BUFFER, h.buf)
		gl.GetBufferSubData(gl.COPY_READ_BUFFER, 4*h.offD, 4*len(got), unsafe.Pointer(&got[0]))
		gl.BindBuffer(gl.COPY_READ_BUFFER, 0)
		for i := 0; i < haM; i++ {
			for j := 0; j < haN; j++ {
				var p, abs float64
				for k := 0; k < haK; k++ {
					x := float64(h.floats[h.offA+i*haLda+k]) * float64(h.floats[h.offB+k*haLdb+j])
					p += x
					abs += math.Abs(x)
				}
				if e := math.Abs(float64(got[i*haN+j]) - p); !(e <= float64(haK+2)*0x1p-24*abs) {
					t.Fatalf("D[%d,%d] = %v, want %v", i, j, got[i*haN+j], p)
				}
				h.floats[h.offD+i*haN+j] = got[i*haN+j]
			}
		}
		h.check(t, d, "α = 0, β = 0.25 after a product in the same buffer", func(i, j int) float32 {
			return 0.25 * c0[h.offC+i*haLdc+j]
		})
	})
}

// TestUploadDoesNotWait: an engine's per-frame uploads, back to back, never
// wait for the GPU in the caller's thread (issue 22: each Upload waited on
// its staging buffer's last copy with glClientWaitSync). Small matrices
// go through glBufferSubData; larger ones alternate between the two
// staging buffers, whose copies the GPU has made by the next frame's
// upload (here: a fence between frames).
func TestUploadDoesNotWait(t *testing.T) {
	withBorrowedEGL(t, func(d *Device) {
		rng := rand.New(rand.NewPCG(22, 3))
		for _, n := range []int{64, 300, 700} { // 16 KiB, 352 KiB, 1.9 MiB
			m, err := d.NewMatrix(n, n)
			if err != nil {
				t.Fatal(err)
			}
			src := make([]float32, n*n)
			back := make([]float32, n*n)
			for frame := 0; frame < 6; frame++ {
				for i := range src {
					src[i] = 2*rng.Float32() - 1
				}
				before := 0
				if d.stager != nil {
					before = d.stager.Waits
				}
				if err := m.Upload(blas32.General{Rows: n, Cols: n, Stride: n, Data: src}); err != nil {
					t.Fatal(err)
				}
				if d.stager != nil && d.stager.Waits != before {
					t.Errorf("%d×%d, frame %d: Upload waited for the GPU", n, n, frame)
				}
				if frame%2 == 1 { // every other frame the engine reads it back
					if err := m.Download(blas32.General{Rows: n, Cols: n, Stride: n, Data: back}); err != nil {
						t.Fatal(err)
					}
					for i := range src {
						if back[i] != src[i] {
							t.Fatalf("%d×%d, frame %d: element %d = %v after Upload, want %v", n, n, frame, i, back[i], src[i])
						}
					}
				}
				f := d.Fence() // the frame ends
				f.Wait(10 * time.Second)
				f.Release()
			}
			m.Release()
		}
	})
}
