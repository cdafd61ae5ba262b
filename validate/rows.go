package validate

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas/blas32"
)

// Rows checks a product C = A·B with Freivalds' method block of rows by
// block of rows, as CheckFreivalds does for a whole product, for a C that
// arrives in blocks beside the rows of A that made them (glmul mul's
// streamed product): NewRows draws the vectors x and computes B·x once;
// Check checks blocks, in any order; Result is the worst row so far. The
// vectors are fused: one pass over a row of A or C serves all of them, and
// a large block is split over the CPUs. PrepareA computes a block's A
// side (A·(B·x)) ahead of its C, while a GPU makes C: checking C is then
// a pass over C alone.
//
// A NaN or an Inf in B's column j reaches only C's column j: x is zero
// there and those elements are checked to be non-finite one by one; a row
// of A with one makes its whole row of C non-finite, checked the same way.
//
// Check, PrepareA, PreparedRows.Check and Result are safe for concurrent
// use.
type Rows struct {
	k, n, vectors int
	x             []float64 // n×vectors: x[j*vectors+v], zero in B's non-finite columns
	y             []float64 // k×vectors: B·x
	colNF         []bool    // B's columns with a NaN or an Inf
	anyColNF      bool
	// yAbs and xNorm, per vector: ‖|B|·|x|‖ and ‖x‖, for the float64
	// slack (see rows); xSum is ‖x‖₁, for the subnormal flush.
	yAbs, xNorm, xSum []float64
	slack             float64
	// A row of C with a NaN or an Inf that float32 may have made by
	// overflowing (mayOverflow: ‖aᵢ‖·maxCol, which bounds Σ|aᵢₖ||bₖⱼ| by
	// Cauchy–Schwarz, above float32's largest value) is checked in full
	// instead, by full, made for the first such row.
	maxCol float64 // the largest ‖B:,ⱼ‖₂ of B's finite columns
	g      float64 // γ_k in float32, mayOverflow's slack
	full   *lazyFull
	procs  int // goroutines for NewRowsOn's, PrepareA's and the checks' work
	mu     sync.Mutex
	r      Result
}

// NewRows prepares the check of products by b (k×n) with vectors random
// vectors from rng, drawn as CheckFreivalds draws them.
func NewRows(b blas32.General, vectors int, rng *rand.Rand) *Rows {
	return NewRowsOn(b, vectors, rng, 0)
}

// NewRowsOn is NewRows with its work, PrepareA's and Check's, on at
// most procs goroutines (0: GOMAXPROCS), for a check prepared beside
// other work that needs CPUs too; the results are the same.
func NewRowsOn(b blas32.General, vectors int, rng *rand.Rand, procs int) *Rows {
	if procs <= 0 || procs > runtime.GOMAXPROCS(0) {
		procs = runtime.GOMAXPROCS(0)
	}
	k, n := b.Rows, b.Cols
	colNF := nonFiniteColsOn(procs, b.Data, b.Rows, b.Cols, b.Stride)
	f := &Rows{k: k, n: n, vectors: vectors, procs: procs, x: make([]float64, n*vectors), y: make([]float64, k*vectors),
		colNF: colNF, yAbs: make([]float64, vectors), xNorm: make([]float64, vectors), xSum: make([]float64, vectors),
		slack: gamma(k+n, u64), r: Result{Mode: Freivalds, OK: true, Vectors: vectors, Row: -1, Col: -1}}
	bNorm2 := columnNorms2(b, procs)
	f.full, f.g = &lazyFull{b: b}, gamma(k, u32)
	for j, c2 := range bNorm2 {
		if !colNF[j] {
			f.maxCol = max(f.maxCol, math.Sqrt(c2))
		}
		f.anyColNF = f.anyColNF || colNF[j]
	}
	for v := 0; v < vectors; v++ {
		var xx float64
		for j := 0; j < n; j++ {
			x := 2*rng.Float64() - 1 // drawn for every column: the same x whatever B holds
			if colNF[j] {
				x = 0
			}
			f.x[j*vectors+v] = x
			xx += x * x
			f.xSum[v] += math.Abs(x)
		}
		f.xNorm[v] = math.Sqrt(xx)
	}
	yAbs := make([]float64, k*vectors) // |B|·|x|
	inParallelOn(procs, k, n*vectors, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			y, ya, row := f.y[p*vectors:(p+1)*vectors], yAbs[p*vectors:(p+1)*vectors], b.Data[p*b.Stride:p*b.Stride+n]
			if vectors == 4 && !f.anyColNF {
				bx4(y, ya, row, f.x)
				continue
			}
			for j, bv := range row {
				if colNF[j] {
					continue // 0·NaN would be NaN
				}
				for v := range y {
					t := float64(bv) * f.x[j*vectors+v]
					y[v] += t
					ya[v] += math.Abs(t)
				}
			}
		}
	})
	for p := 0; p < k; p++ {
		for v := range vectors {
			f.yAbs[v] += yAbs[p*vectors+v] * yAbs[p*vectors+v]
		}
	}
	for v := range f.yAbs {
		f.yAbs[v] = math.Sqrt(f.yAbs[v])
	}
	return f
}

// columnNorms2 returns the squared norms of b's columns, its rows summed
// on up to procs goroutines.
func columnNorms2(b blas32.General, procs int) []float64 {
	workers := min(procs, max(1, b.Rows*b.Cols/parallelMin))
	parts := make([][]float64, workers)
	per := (b.Rows + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			part := make([]float64, b.Cols)
			for p := w * per; p < min(b.Rows, (w+1)*per); p++ {
				for j, v := range b.Data[p*b.Stride : p*b.Stride+b.Cols] {
					part[j] += float64(v) * float64(v)
				}
			}
			parts[w] = part
		})
	}
	wg.Wait()
	sum := parts[0]
	for _, part := range parts[1:] {
		for j, v := range part {
			sum[j] += v
		}
	}
	return sum
}

// inParallel runs f over [0, n) in ranges on up to GOMAXPROCS goroutines,
// as many as give each at least parallelMin multiply-adds at cost each.
func inParallel(n, cost int, f func(lo, hi int)) {
	inParallelOn(runtime.GOMAXPROCS(0), n, cost, f)
}

// inParallelOn is inParallel on up to procs goroutines.
func inParallelOn(procs, n, cost int, f func(lo, hi int)) {
	workers := min(procs, max(1, n*cost/parallelMin))
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		if lo, hi := w*per, min(n, (w+1)*per); lo < hi {
			wg.Go(func() { f(lo, hi) })
		}
	}
	wg.Wait()
}

// parallelMin is the fewest multiply-adds a goroutine of Check gets.
const parallelMin = 1 << 20

// Check checks rows r0… of C: a holds those rows of A (k columns), c the
// same rows of C (n columns). It panics if the shapes disagree with B's.
func (f *Rows) Check(a, c blas32.General, r0 int) { f.check(a, c, r0, nil) }

// PreparedRows is A's side of the check of a block of rows (PrepareA):
// per row, the projections A·(B·x), Σ aᵢₖ² and the walk of their partial
// sums (see rows), which read A and B alone. A product's C can then be
// checked as it arrives, or after the GPU made it, at the cost of C's
// side alone, with A's side computed while the GPU worked.
type PreparedRows struct {
	f    *Rows
	a    blas32.General
	r0   int
	side []float64 // row i's V projections, then Σ a², then the walk: side[i*(V+2):]
}

// SetProcs sets how many goroutines PrepareA and the checks use from
// now on (0: GOMAXPROCS): all of them, say, once the work a check was
// prepared beside (NewRowsOn) has ended. Not concurrently with them.
func (f *Rows) SetProcs(procs int) {
	if procs <= 0 || procs > runtime.GOMAXPROCS(0) {
		procs = runtime.GOMAXPROCS(0)
	}
	f.procs = procs
}

// PrepareA computes A's side of the check of rows r0… of C, a holding
// those rows of A (k columns), over the CPUs. It panics if a's shape
// disagrees with B's.
func (f *Rows) PrepareA(a blas32.General, r0 int) *PreparedRows {
	if a.Cols != f.k {
		panic("validate: shapes of A and B do not agree")
	}
	V := f.vectors
	p := &PreparedRows{f: f, a: a, r0: r0, side: make([]float64, a.Rows*(V+2))}
	inParallelOn(f.procs, a.Rows, f.k*V, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := p.side[i*(V+2) : (i+1)*(V+2)]
			s[V], s[V+1] = f.sideA(s[:V], a.Data[i*a.Stride:i*a.Stride+f.k])
		}
	})
	return p
}

// Check checks C's rows that p's rows of A made (c, n columns), with
// the same result as Rows.Check(a, c, r0), bit for bit. It panics if the
// shapes disagree.
func (p *PreparedRows) Check(c blas32.General) { p.f.check(p.a, c, p.r0, p.side) }

// check is Check, A's side taken from side where it is not nil.
func (f *Rows) check(a, c blas32.General, r0 int, side []float64) {
	if a.Cols != f.k || c.Cols != f.n || a.Rows != c.Rows {
		panic("validate: shapes of A, B and C do not agree")
	}
	workers := min(f.procs, max(1, a.Rows*(f.k+f.n)*f.vectors/parallelMin))
	per := (a.Rows + workers - 1) / workers
	worst := make([]Result, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*per, min(a.Rows, (w+1)*per)
		worst[w] = Result{WorstRatio: -1, Col: -1}
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			worst[w] = f.rows(a, c, lo, hi, r0, side)
		}()
	}
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range worst {
		if w.WorstRatio > f.r.WorstRatio || f.r.Row < 0 && w.WorstRatio >= 0 {
			f.r.WorstRatio, f.r.Row, f.r.Col, f.r.Got, f.r.Want, f.r.Bound = w.WorstRatio, w.Row, w.Col, w.Got, w.Want, w.Bound
		}
	}
	f.r.OK = f.r.WorstRatio <= 1
}

// sideA sets want[v] to (A·(B·x))ᵢ for each vector and returns Σ aᵢₖ²
// and the walk (rows) of arow, row i of A.
func (f *Rows) sideA(want []float64, arow []float32) (an, walk float64) {
	if len(want) == 4 {
		return dot4(want, arow, f.y)
	}
	return dotV(want, arow, f.y)
}

// rows checks rows [lo, hi) of the block and returns the worst, A's side
// of each row taken from side (PreparedRows) where it is not nil.
//
// The bound of (Ĉx)ᵢ is the probabilistic bound of each element's
// rounding (λ·u·√(Σ s² + Σ p²) over its partial sums s and terms p, the
// package doc) summed over the row against x, a random walk again:
// λ·u·√(Σⱼ xⱼ² (Σ s² + Σ p²)ᵢⱼ). Summed in order, an element's partial sums
// are Sᵢⱼₖ = Σ_{l≤k} aᵢₗbₗⱼ, and Σₖ Σⱼ xⱼ² Sᵢⱼₖ² is what the projections'
// own partial sums give (Σ_{l≤k} aᵢₗ(Bx)ₗ has that mean square over x's
// signs; 3/V of their squares summed over the V vectors, x being uniform
// on [−1, 1), estimates Σⱼ Sᵢⱼₖ², which bounds it for every vector). The
// factor 8 covers other orders and the terms as in elementBound (where
// every partial sum is a difference of two Sₖ). The float64 evaluation's own error,
// γ_{k+n}·(Σ|a||B·x| + Σ|c||x|), is bounded through Cauchy–Schwarz by
// γ_{k+n}·(‖a‖·‖|B|·|x|‖ + ‖c‖·‖x‖).
func (f *Rows) rows(a, c blas32.General, lo, hi, r0 int, side []float64) Result {
	V := f.vectors
	worst := Result{WorstRatio: -1, Col: -1}
	want, got := make([]float64, V), make([]float64, V)
	scale := probScale * math.Sqrt(3/float64(V)) // probScale holds √8
	for i := lo; i < hi; i++ {
		arow, crow := a.Data[i*a.Stride:i*a.Stride+f.k], c.Data[i*c.Stride:i*c.Stride+f.n]
		var an, walk float64
		if side != nil {
			s := side[i*(V+2) : (i+1)*(V+2)]
			copy(want, s[:V])
			an, walk = s[V], s[V+1]
		} else {
			an, walk = f.sideA(want, arow)
		}
		if math.IsNaN(an) || math.IsInf(an, 0) { // A's row holds a NaN or an Inf: so does every element of C's
			if j := firstFinite(crow, nil); j >= 0 {
				worst = worse(worst, missedNonFinite(r0+i, j, crow[j]))
			}
			continue
		}
		if f.anyColNF { // B's non-finite columns: C's elements there too
			if j := firstFinite(crow, f.colNF); j >= 0 {
				worst = worse(worst, missedNonFinite(r0+i, j, crow[j]))
			}
		}
		cn := f.dotC(got, crow)
		an, cn = math.Sqrt(an), math.Sqrt(cn)
		if (math.IsNaN(cn) || math.IsInf(cn, 0)) && mayOverflow(an*f.maxCol, f.g, math.MaxFloat32) {
			f.full.get().Check(blas32.General{Rows: 1, Cols: f.k, Stride: f.k, Data: arow},
				blas32.General{Rows: 1, Cols: f.n, Stride: f.n, Data: crow}, r0+i)
			continue
		}
		for v := range got {
			bound := scale*math.Sqrt(walk) + f.slack*(an*f.yAbs[v]+cn*f.xNorm[v]) + 2*float64(f.k)*tiny*f.xSum[v]
			worst = worse(worst, Result{WorstRatio: ratio(math.Abs(got[v]-want[v]), bound), Row: r0 + i, Col: -1, Got: got[v], Want: want[v], Bound: bound})
		}
	}
	return worst
}

// worse returns the worse of two results.
func worse(w, r Result) Result {
	if r.WorstRatio > w.WorstRatio {
		return r
	}
	return w
}

// missedNonFinite is the failure of C[i][j] = got, finite, where a NaN or
// an Inf of A's row i or B's column j must make it NaN or ±Inf.
func missedNonFinite[E float](i, j int, got E) Result {
	return Result{WorstRatio: math.Inf(1), Row: i, Col: j, Got: float64(got), Want: math.NaN()}
}

// firstFinite returns the first j where crow[j] is finite and mask is nil
// or true, or −1.
func firstFinite[E float](crow []E, mask []bool) int {
	for j, v := range crow {
		if (mask == nil || mask[j]) && v-v == 0 {
			return j
		}
	}
	return -1
}

// dotC sets got[v] to (C·x)ᵢ for each vector and returns Σ cᵢⱼ² over B's
// finite columns (x is zero elsewhere, and 0·NaN would be NaN).
func (f *Rows) dotC(got []float64, crow []float32) float64 {
	if !f.anyColNF {
		if len(got) == 4 {
			return dotC4(got, crow, f.x)
		}
		sq, _ := dotV(got, crow, f.x)
		return sq
	}
	clear(got)
	var sq float64
	for j, cv := range crow {
		if f.colNF[j] {
			continue
		}
		x := float64(cv)
		sq += x * x
		for v := range got {
			got[v] += x * f.x[j*len(got)+v]
		}
	}
	return sq
}

// dotV sets out[v] to Σ_p row[p]·m[p·V+v] for each of the V = len(out)
// columns of m, and returns Σ_p row[p]² and the squares of the partial
// sums, Σ_p Σ_v (Σ_{q≤p} row[q]·m[q·V+v])² (the projections' walk, see
// rows), all in float64.
func dotV(out []float64, row []float32, m []float64) (sq, walk float64) {
	clear(out)
	V := len(out)
	for p, rv := range row {
		x := float64(rv)
		sq += x * x
		for v := range out {
			out[v] += x * m[p*V+v]
			walk += out[v] * out[v]
		}
	}
	return sq, walk
}

// dot4 is dotV for 4 vectors (FreivaldsVectors), its sums in registers:
// the same operations in the same order, in a quarter of the time
// (BenchmarkRows).
func dot4(out []float64, row []float32, m []float64) (sq, walk float64) {
	var s0, s1, s2, s3, w0, w1, w2, w3 float64 // w: the walk, a sum per vector (four chains, not one)
	m = m[:4*len(row)]
	for p, rv := range row {
		x := float64(rv)
		sq += x * x
		w := m[4*p : 4*p+4 : 4*p+4]
		s0 += x * w[0]
		s1 += x * w[1]
		s2 += x * w[2]
		s3 += x * w[3]
		w0 += s0 * s0
		w1 += s1 * s1
		w2 += s2 * s2
		w3 += s3 * s3
	}
	out[0], out[1], out[2], out[3] = s0, s1, s2, s3
	return sq, w0 + w1 + w2 + w3
}

// dotC4 is dot4 without the walk, which C's side of the check does not
// use: the same projections and Σ row[p]², bit for bit (the same sums in
// the same order), in about half the time (BenchmarkRowsParts). Two
// elements a pass, the slices advanced rather than indexed, leave no
// bounds check in the loop.
func dotC4(out []float64, row []float32, m []float64) (sq float64) {
	var s0, s1, s2, s3 float64
	m = m[:4*len(row)]
	for len(row) >= 2 && len(m) >= 8 {
		x, y := float64(row[0]), float64(row[1])
		sq += x * x
		s0 += x * m[0]
		s1 += x * m[1]
		s2 += x * m[2]
		s3 += x * m[3]
		sq += y * y
		s0 += y * m[4]
		s1 += y * m[5]
		s2 += y * m[6]
		s3 += y * m[7]
		row, m = row[2:], m[8:]
	}
	if len(row) == 1 && len(m) >= 4 { // an odd row's last element
		x := float64(row[0])
		sq += x * x
		s0 += x * m[0]
		s1 += x * m[1]
		s2 += x * m[2]
		s3 += x * m[3]
	}
	out[0], out[1], out[2], out[3] = s0, s1, s2, s3
	return sq
}

// Result is the check of every row Checked so far.
func (f *Rows) Result() Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.r
	if r.Row < 0 { // nothing checked
		r.WorstRatio = 0
	}
	if full := f.full.made(); full != nil { // rows checked in full: the worse element of the two
		if fr := full.Result(); !fr.OK || fr.WorstRatio > r.WorstRatio {
			r.OK, r.WorstRatio, r.Row, r.Col, r.Got, r.Want, r.Bound = r.OK && fr.OK, fr.WorstRatio, fr.Row, fr.Col, fr.Got, fr.Want, fr.Bound
		}
	}
	return r
}

// bx4 is NewRows' pass over a row of B for 4 vectors and no non-finite
// column, its sums in registers: y[v] = Σⱼ bⱼxⱼᵥ and ya[v] = Σⱼ |bⱼxⱼᵥ|
// (the general loop, through memory, took 85% of the check at 8192²).
// Two elements a pass, the slices advanced rather than indexed, leave no
// bounds check in the loop: 2.4 ns an element at 4096² against 3.8 for
// one element a pass with its checks, the same sums in the same order.
func bx4(y, ya []float64, row []float32, x []float64) {
	var y0, y1, y2, y3, a0, a1, a2, a3 float64
	x = x[:4*len(row)]
	for len(row) >= 2 && len(x) >= 8 {
		b := float64(row[0])
		t0, t1, t2, t3 := b*x[0], b*x[1], b*x[2], b*x[3]
		y0, y1, y2, y3 = y0+t0, y1+t1, y2+t2, y3+t3
		a0, a1, a2, a3 = a0+math.Abs(t0), a1+math.Abs(t1), a2+math.Abs(t2), a3+math.Abs(t3)
		b = float64(row[1])
		t0, t1, t2, t3 = b*x[4], b*x[5], b*x[6], b*x[7]
		y0, y1, y2, y3 = y0+t0, y1+t1, y2+t2, y3+t3
		a0, a1, a2, a3 = a0+math.Abs(t0), a1+math.Abs(t1), a2+math.Abs(t2), a3+math.Abs(t3)
		row, x = row[2:], x[8:]
	}
	if len(row) == 1 && len(x) >= 4 { // an odd row's last element
		b := float64(row[0])
		t0, t1, t2, t3 := b*x[0], b*x[1], b*x[2], b*x[3]
		y0, y1, y2, y3 = y0+t0, y1+t1, y2+t2, y3+t3
		a0, a1, a2, a3 = a0+math.Abs(t0), a1+math.Abs(t1), a2+math.Abs(t2), a3+math.Abs(t3)
	}
	y[0], y[1], y[2], y[3] = y0, y1, y2, y3
	ya[0], ya[1], ya[2], ya[3] = a0, a1, a2, a3
}
