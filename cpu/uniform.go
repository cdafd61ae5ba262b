package cpu

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// UniformBlock is how many elements of a matrix FillUniform draws from
// one generator: the matrix's elements in row order (stride gaps
// skipped) are cut into blocks of this many, the last shorter, and block
// b is drawn from a PCG of its own, seeded from (seed, stream, b). The
// values therefore depend on the seed, the stream and the matrix's shape
// only, never on how many goroutines fill it. 1<<16 elements (256 KiB)
// is large beside a block's set-up and small beside the matrices worth
// filling in parallel.
const UniformBlock = 1 << 16

// Uniform returns a rows×cols matrix filled by FillUniform.
func Uniform(rows, cols int, seed, stream uint64) blas32.General {
	m := New(rows, cols)
	FillUniform(m, seed, stream, nil)
	return m
}

// FillUniform sets the elements of m (not its stride gaps) to values
// uniform on [-1, 1), in blocks of UniformBlock elements, each from its
// own PCG stream derived from (seed, stream, block index), on up to
// runtime.GOMAXPROCS goroutines: the same values whatever their number.
// Matrices of one seed get different streams (A 0, B 1, say) so that
// their values are independent. Distinct matrices may be filled
// concurrently.
//
// Each value is an odd multiple of 2⁻²⁴, (2u+1)·2⁻²⁴ − 1 for u uniform on
// the 2²⁴ integers below 2²⁴: exact in float32, spread evenly over
// [-1, 1), symmetric about 0 (mean 0, variance 1/3 − 2⁻⁴⁸/3), never 0,
// ±1 or beyond; one 64-bit draw gives two values. Random's values, a
// float64 rounded to float32, are uniform too but can round up to 1.
//
// progress, if not nil, is called with done, the elements filled so far
// counted in row order (every element before the done-th is filled: a
// caller may read those rows while the rest are made), and m's element
// count, from the filling goroutines one call at a time, a few hundred
// times at most, the last with done equal to total.
//
// FillUniform is the parallel, thread-count-independent counterpart of
// Fill; the two give different values for the same seed.
func FillUniform(m blas32.General, seed, stream uint64, progress func(done, total int)) {
	if m.Rows*m.Cols > 0 && (m.Stride < m.Cols || len(m.Data) < (m.Rows-1)*m.Stride+m.Cols) {
		panic("cpu: bad stride")
	}
	fillBlocks(m.Rows*m.Cols, seed, stream, progress, func(lo, hi int, base, block uint64) { fillBlock(m, lo, hi, base, block) })
}

// FillUniform64 is FillUniform for a float64 matrix: each value an odd
// multiple of 2⁻⁵³, (2u+1)·2⁻⁵³ − 1 for u uniform on the 2⁵³ integers
// below 2⁵³, exact in float64 (53 bits where its magnitude is over a
// half), spread evenly over [-1, 1), never 0, ±1 or beyond; one 64-bit
// draw a value. Its blocks, streams and threads are FillUniform's: the
// same values whatever their number.
func FillUniform64(m blas64.General, seed, stream uint64, progress func(done, total int)) {
	if m.Rows*m.Cols > 0 && (m.Stride < m.Cols || len(m.Data) < (m.Rows-1)*m.Stride+m.Cols) {
		panic("cpu: bad stride")
	}
	fillBlocks(m.Rows*m.Cols, seed, stream, progress, func(lo, hi int, base, block uint64) { fillBlock64(m, lo, hi, base, block) })
}

// fillBlocks fills total elements in blocks of UniformBlock with fill, on
// up to runtime.GOMAXPROCS goroutines, calling progress as FillUniform
// says.
func fillBlocks(total int, seed, stream uint64, progress func(done, total int), fill func(lo, hi int, base, block uint64)) {
	if total == 0 {
		if progress != nil {
			progress(0, 0)
		}
		return
	}
	blocks := (total + UniformBlock - 1) / UniformBlock
	base := splitMix(splitMix(seed) ^ stream)
	var next atomic.Int64
	// Under mu: which blocks are filled, how many lead without a gap
	// (workers take blocks in order, so the gaps are few and short), and
	// that lead when progress was last called.
	var mu sync.Mutex
	var filled []bool
	lead, reported := 0, 0
	every := max(1, blocks/256) // blocks between progress calls
	if progress != nil {
		filled = make([]bool, blocks)
	}
	work := func() {
		for {
			b := int(next.Add(1) - 1)
			if b >= blocks {
				return
			}
			fill(b*UniformBlock, min(total, (b+1)*UniformBlock), base, uint64(b))
			if progress == nil {
				continue
			}
			mu.Lock()
			for filled[b] = true; lead < blocks && filled[lead]; lead++ {
			}
			if lead-reported >= every || lead == blocks && reported < blocks {
				reported = lead
				progress(min(total, lead*UniformBlock), total)
			}
			mu.Unlock()
		}
	}
	workers := min(runtime.GOMAXPROCS(0), blocks)
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// fillBlock fills elements [lo, hi) of m, counted in row order, from the
// block's own generator: a value of a draw left over at a row's end
// starts the next row. A compact m's block is one run of Data.
func fillBlock(m blas32.General, lo, hi int, base, block uint64) {
	p := blockPCG(base, block)
	var spare uint64 // the second value of the last draw
	haveSpare := false
	i, j := lo/m.Cols, lo%m.Cols
	for e := lo; e < hi; i, j = i+1, 0 {
		n := min(m.Cols-j, hi-e)
		if m.Stride == m.Cols {
			n = hi - e
		}
		row := m.Data[i*m.Stride+j:][:n]
		e += n
		if haveSpare {
			row[0], row = value(spare), row[1:]
		}
		p, spare = p.fill(row)
		haveSpare = len(row)%2 == 1
	}
}

// fillBlock64 is fillBlock for a float64 matrix: a draw a value.
func fillBlock64(m blas64.General, lo, hi int, base, block uint64) {
	p := blockPCG(base, block)
	i, j := lo/m.Cols, lo%m.Cols
	for e := lo; e < hi; i, j = i+1, 0 {
		n := min(m.Cols-j, hi-e)
		if m.Stride == m.Cols {
			n = hi - e
		}
		p = p.fill64(m.Data[i*m.Stride+j:][:n])
		e += n
	}
}

// pcg is math/rand/v2's PCG, the same state, step and DXSM output, so the
// same draws as its Uint64, but held by value so that a loop keeps it in
// registers. The fills draw twice from one state, its next and the one
// after (one step of pcgMul², pcgInc·(pcgMul+1)), so that two
// multiplications are in flight instead of one after the other.
type pcg struct{ hi, lo uint64 }

// The PCG's step, state·pcgMul + pcgInc modulo 2¹²⁸, and the step of two.
const (
	pcgMul  = 2549297995355413924<<64 | 4865540595714422341
	pcgInc  = 6364136223846793005<<64 | 1442695040888963407
	pcgMul2 = pcgMul * pcgMul % (1 << 128)
	pcgInc2 = (pcgInc*pcgMul + pcgInc) % (1 << 128)
)

// blockPCG is the generator of a block: rand.NewPCG(s, splitMix(s)) for
// s = splitMix(base ^ block).
func blockPCG(base, block uint64) pcg {
	s := splitMix(base ^ block)
	return pcg{s, splitMix(s)}
}

// affine returns p's state times mul plus inc, modulo 2¹²⁸.
func (p pcg) affine(mulHi, mulLo, incHi, incLo uint64) pcg {
	hi, lo := bits.Mul64(p.lo, mulLo)
	hi += p.hi*mulLo + p.lo*mulHi
	lo, c := bits.Add64(lo, incLo, 0)
	hi, _ = bits.Add64(hi, incHi, c)
	return pcg{hi, lo}
}

// next is the state after p's; next2 the one after that.
func (p pcg) next() pcg {
	return p.affine(pcgMul>>64, pcgMul&(1<<64-1), pcgInc>>64, pcgInc&(1<<64-1))
}

func (p pcg) next2() pcg {
	return p.affine(pcgMul2>>64, pcgMul2&(1<<64-1), pcgInc2>>64, pcgInc2&(1<<64-1))
}

// out is the draw of state p (DXSM): PCG.Uint64 steps, then returns out.
func (p pcg) out() uint64 {
	const cheapMul = 0xda942042e4dd58b5
	hi := p.hi
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	return hi * (p.lo | 1)
}

// fill sets dst from p's next draws, two values a draw, high bits first,
// and returns the generator after them and, where len(dst) is odd, the
// unused second value of the last draw.
func (p pcg) fill(dst []float32) (pcg, uint64) {
	const mask = 1<<24 - 1
	for len(dst) >= 4 {
		a, b := p.next(), p.next2()
		u, v := a.out(), b.out()
		dst[0], dst[1], dst[2], dst[3] = value(u>>40), value(u>>16&mask), value(v>>40), value(v>>16&mask)
		p, dst = b, dst[4:]
	}
	if len(dst) >= 2 {
		p = p.next()
		u := p.out()
		dst[0], dst[1] = value(u>>40), value(u>>16&mask)
		dst = dst[2:]
	}
	if len(dst) == 1 {
		p = p.next()
		u := p.out()
		dst[0] = value(u >> 40)
		return p, u >> 16 & mask
	}
	return p, 0
}

// fill64 sets dst from p's next draws, a value a draw, and returns the
// generator after them.
func (p pcg) fill64(dst []float64) pcg {
	for len(dst) >= 2 {
		a, b := p.next(), p.next2()
		dst[0], dst[1] = value64(a.out()>>11), value64(b.out()>>11)
		p, dst = b, dst[2:]
	}
	if len(dst) == 1 {
		p = p.next()
		dst[0] = value64(p.out() >> 11)
	}
	return p
}

// value64 maps u, 53 random bits, to (2u+1)·2⁻⁵³ − 1: an odd integer
// below 2⁵³ in magnitude, 2u+1−2⁵³, times a power of two, so exact.
func value64(u uint64) float64 {
	return float64(int64(2*u)-(1<<53-1)) * (1.0 / (1 << 53))
}

// value maps u, 24 random bits, to (2u+1)·2⁻²⁴ − 1.
func value(u uint64) float32 {
	return float32(int32(2*u)-(1<<24-1)) * (1.0 / (1 << 24))
}

// splitMix is SplitMix64's finalizer: a bijection of 64 bits whose
// outputs for neighbouring inputs are unrelated, so that the blocks'
// generators start far apart in effect.
func splitMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
