package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// This file checks products on matrices that live inside larger buffers,
// as a game engine's do: several matrices in one buffer with gaps between
// them, element offsets, row strides, the same matrix as both operands.
// The check is over whole buffers: the floats of C must be within the
// float32 error bound of a float64 reference, and every other float of
// every buffer must come back bit for bit as it was.

// View is a row-major matrix inside buffer Buf of an arena: element (i, j)
// is float Off + i·Stride + j of that buffer.
type View struct {
	Buf        int
	Off        int
	Rows, Cols int
	Stride     int
}

func (v View) String() string {
	return fmt.Sprintf("%d×%d@buf%d+%d/ld%d", v.Rows, v.Cols, v.Buf, v.Off, v.Stride)
}

// end is one past the last float of v.
func (v View) end() int { return v.Off + (v.Rows-1)*v.Stride + v.Cols }

// at is the index of element (i, j) in v's buffer.
func (v View) at(i, j int) int { return v.Off + i*v.Stride + j }

// Arena is the buffers a case works on: their sizes in floats.
type Arena []int

// random returns the arena's buffers filled with seeded random values in
// [-1, 1).
func (a Arena) random(rng *rand.Rand) [][]float32 {
	bufs := make([][]float32, len(a))
	for i, n := range a {
		bufs[i] = make([]float32, n)
		for j := range bufs[i] {
			bufs[i][j] = float32(2*rng.Float64() - 1)
		}
	}
	return bufs
}

// GemmCase is C = α·op(A)·op(B) + β·C on views into an arena.
type GemmCase struct {
	Name           string
	Arena          Arena
	A, B, C        View
	TransA, TransB bool
	Alpha, Beta    float32
}

func (g GemmCase) String() string {
	t := func(b bool) string {
		if b {
			return "T"
		}
		return "N"
	}
	name := g.Name
	if name == "" {
		name = fmt.Sprintf("A=%v,B=%v,C=%v", g.A, g.B, g.C)
	}
	return fmt.Sprintf("%s/%s%s/a=%g/b=%g", name, t(g.TransA), t(g.TransB), g.Alpha, g.Beta)
}

// dims returns M, N, K, panicking on a malformed case (a test bug).
func (g GemmCase) dims() (m, n, k int) {
	m, n = g.C.Rows, g.C.Cols
	am, ak := g.A.Rows, g.A.Cols
	if g.TransA {
		am, ak = ak, am
	}
	bk, bn := g.B.Rows, g.B.Cols
	if g.TransB {
		bk, bn = bn, bk
	}
	if am != m || bn != n || ak != bk {
		panic("conformance: GemmCase shapes disagree: " + g.String())
	}
	for _, v := range []View{g.A, g.B, g.C} {
		if v.Buf < 0 || v.Buf >= len(g.Arena) || v.end() > g.Arena[v.Buf] || v.Stride < v.Cols || v.Off < 0 {
			panic("conformance: GemmCase view outside its buffer: " + g.String())
		}
	}
	return m, n, ak
}

// GemmRunner runs one case on the implementation under test: bufs holds
// the arena's initial contents, and on return must hold its contents after
// the product (the GPU's buffers read back whole).
type GemmRunner func(bufs [][]float32, g GemmCase) error

// FillArena returns the arena's buffers filled with seeded random values in
// [-1, 1). Where a product must not read an operand (α = 0: A and B; β = 0:
// C) that operand is NaN instead, so reading it shows.
func FillArena(g GemmCase, rng *rand.Rand) [][]float32 {
	bufs := g.Arena.random(rng)
	nan := float32(math.NaN())
	poison := func(v View) {
		for i := 0; i < v.Rows; i++ {
			for j := 0; j < v.Cols; j++ {
				bufs[v.Buf][v.at(i, j)] = nan
			}
		}
	}
	if g.Alpha == 0 {
		poison(g.A)
		poison(g.B)
	}
	if g.Beta == 0 {
		poison(g.C)
	}
	return bufs
}

// CheckGemm runs g through run on seeded random contents and returns an
// error describing what went wrong: elements of C outside the bound
// γ_{K+2}·(|α|·|op(A)||op(B)| + |β·C₀|) of the float64 reference, and any
// other float of any buffer that changed. Views may share a buffer; C must
// not overlap A or B.
func CheckGemm(g GemmCase, seed uint64, run GemmRunner) error {
	m, n, k := g.dims()
	bufs := FillArena(g, rand.New(rand.NewPCG(seed, uint64(m*1009+n*101+k))))
	before := clone2(bufs)
	ref, bound := gemmReference(g, before, m, n, k)
	want := map[[2]int]expect{}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			want[[2]int{g.C.Buf, g.C.at(i, j)}] = expect{fmt.Sprintf("C[%d,%d]", i, j), ref[i*n+j], bound[i*n+j]}
		}
	}
	if err := run(bufs, g); err != nil {
		return fmt.Errorf("%v: %w", g, err)
	}
	if err := checkArena(bufs, before, want, g.describe); err != nil {
		return fmt.Errorf("%v: %w", g, err)
	}
	return nil
}

// expect is what one float of a result must hold: ref within bound.
type expect struct {
	name       string
	ref, bound float64
}

// checkArena compares the buffers after a run with those before: each
// float in want within its bound of the reference, every other float bit
// for bit unchanged. describe names a float for the report.
func checkArena(bufs, before [][]float32, want map[[2]int]expect, describe func(buf, idx int) string) error {
	var r report
	for b := range bufs {
		if len(bufs[b]) != len(before[b]) {
			return fmt.Errorf("buffer %d came back with %d floats, want %d", b, len(bufs[b]), len(before[b]))
		}
		for idx, got := range bufs[b] {
			if w, ok := want[[2]int{b, idx}]; ok {
				if e := math.Abs(float64(got) - w.ref); !(e <= w.bound) {
					r.add("C", fmt.Sprintf("%s = %v, want %.7g ± %.2g", w.name, got, w.ref, w.bound))
				}
				continue
			}
			if math.Float32bits(got) != math.Float32bits(before[b][idx]) {
				r.add("outside", fmt.Sprintf("buffer %d float %d (%s) = %v, was %v", b, idx, describe(b, idx), got, before[b][idx]))
			}
		}
	}
	return r.err()
}

func clone2(bufs [][]float32) [][]float32 {
	out := make([][]float32, len(bufs))
	for i := range bufs {
		out[i] = append([]float32(nil), bufs[i]...)
	}
	return out
}

// describe names what float idx of buffer buf is: an element of A or B, or
// a gap.
func (g GemmCase) describe(buf, idx int) string {
	for _, x := range []struct {
		name string
		v    View
	}{{"A", g.A}, {"B", g.B}, {"C", g.C}} {
		v := x.v
		if v.Buf == buf && idx >= v.Off && idx < v.end() {
			i, j := (idx-v.Off)/v.Stride, (idx-v.Off)%v.Stride
			if j < v.Cols {
				return fmt.Sprintf("%s[%d,%d]", x.name, i, j)
			}
			return fmt.Sprintf("%s's row %d stride gap", x.name, i)
		}
	}
	return "outside every matrix"
}

// gemmReference returns α·op(A)·op(B) + β·C₀ in float64 and its float32
// error bound, γ_{K+2}·(|α|·|op(A)||op(B)| + |β·C₀|).
func gemmReference(g GemmCase, bufs [][]float32, m, n, k int) (ref, bound []float64) {
	a := func(i, p int) float64 {
		if g.TransA {
			return float64(bufs[g.A.Buf][g.A.at(p, i)])
		}
		return float64(bufs[g.A.Buf][g.A.at(i, p)])
	}
	b := func(p, j int) float64 {
		if g.TransB {
			return float64(bufs[g.B.Buf][g.B.at(j, p)])
		}
		return float64(bufs[g.B.Buf][g.B.at(p, j)])
	}
	gk := Gamma(k + 2)
	ref, bound = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, mag float64
			if g.Alpha != 0 {
				for p := 0; p < k; p++ {
					s += a(i, p) * b(p, j)
					mag += math.Abs(a(i, p) * b(p, j))
				}
				s *= float64(g.Alpha)
				mag *= math.Abs(float64(g.Alpha))
			}
			if g.Beta != 0 {
				cv := float64(g.Beta) * float64(bufs[g.C.Buf][g.C.at(i, j)])
				s += cv
				mag += math.Abs(cv)
			}
			ref[i*n+j], bound[i*n+j] = s, gk*mag
		}
	}
	return ref, bound
}

// Gamma is γ_n = n·u/(1 − n·u) for float32's unit roundoff u = 2⁻²⁴: the
// bound on the relative error of n float32 operations in sequence.
func Gamma(n int) float64 {
	u := math.Ldexp(1, -24)
	return float64(n) * u / (1 - float64(n)*u)
}

// report collects failures by kind, keeping the first few of each.
type report struct {
	counts map[string]int
	first  map[string][]string
	kinds  []string
}

func (r *report) add(kind, msg string) {
	if r.counts == nil {
		r.counts, r.first = map[string]int{}, map[string][]string{}
	}
	if r.counts[kind] == 0 {
		r.kinds = append(r.kinds, kind)
	}
	r.counts[kind]++
	if len(r.first[kind]) < 4 {
		r.first[kind] = append(r.first[kind], msg)
	}
}

func (r *report) err() error {
	if len(r.kinds) == 0 {
		return nil
	}
	var parts []string
	for _, k := range r.kinds {
		what := map[string]string{"C": "elements of the result wrong", "outside": "floats outside the result changed"}[k]
		parts = append(parts, fmt.Sprintf("%d %s (%s)", r.counts[k], what, strings.Join(r.first[k], "; ")))
	}
	return fmt.Errorf("%s", strings.Join(parts, "; "))
}

// GemmCases is the table every Gemm implementation must pass: each of the
// four ops with α ∈ {1, 0, −½} and β ∈ {0, 1, ¼}, on layouts a host makes:
// separate buffers at odd offsets with padded strides, A, B and C one after
// another in one buffer with gaps, the same matrix as both operands, and
// shapes on both sides of the 64×64 tile and 16-deep K step.
func GemmCases() []GemmCase {
	var cases []GemmCase
	type shape struct{ m, n, k int }
	for _, s := range []shape{{1, 1, 1}, {37, 29, 53}, {65, 33, 70}, {3, 130, 129}, {64, 64, 16}, {100, 64, 1}} {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, alpha := range []float32{1, 0, -0.5} {
					for _, beta := range []float32{0, 1, 0.25} {
						a, b := opView(s.m, s.k, tA), opView(s.k, s.n, tB)
						c := View{Rows: s.m, Cols: s.n}
						// Separate buffers, odd offsets, padded strides.
						sep := GemmCase{Name: fmt.Sprintf("%dx%dx%d/separate", s.m, s.n, s.k),
							TransA: tA, TransB: tB, Alpha: alpha, Beta: beta}
						sep.A, sep.B, sep.C = place(a, 0, 5, 3), place(b, 1, 0, 1), place(c, 2, 9, 2)
						sep.Arena = Arena{sep.A.end() + 7, sep.B.end() + 3, sep.C.end() + 5}
						// One buffer, A, B, C in a row with gaps 3, 5, 7.
						one := sep
						one.Name = fmt.Sprintf("%dx%dx%d/one-buffer", s.m, s.n, s.k)
						one.A = place(a, 0, 9, 1)
						one.B = place(b, 0, one.A.end()+3, 2)
						one.C = place(c, 0, one.B.end()+5, 3)
						one.Arena = Arena{one.C.end() + 7}
						cases = append(cases, sep, one)
					}
				}
			}
		}
	}
	// The same matrix as both operands: AᵀA and A·Aᵀ.
	for _, s := range []struct{ r, c int }{{45, 19}, {70, 66}} {
		for _, beta := range []float32{0, 0.25} {
			a := place(View{Rows: s.r, Cols: s.c}, 0, 5, 3)
			cases = append(cases,
				GemmCase{Name: fmt.Sprintf("%dx%d/AᵀA", s.r, s.c), Arena: Arena{a.end() + 4, s.c*s.c + 3},
					A: a, B: a, C: View{Buf: 1, Rows: s.c, Cols: s.c, Stride: s.c}, TransA: true, Alpha: 1, Beta: beta},
				GemmCase{Name: fmt.Sprintf("%dx%d/AAᵀ", s.r, s.c), Arena: Arena{a.end() + 4, s.r*s.r + 1},
					A: a, B: a, C: View{Buf: 1, Off: 1, Rows: s.r, Cols: s.r, Stride: s.r}, TransB: true, Alpha: -0.5, Beta: beta})
		}
	}
	return cases
}

// opView is the stored shape of an operand whose op is rows×cols.
func opView(rows, cols int, trans bool) View {
	if trans {
		rows, cols = cols, rows
	}
	return View{Rows: rows, Cols: cols}
}

// place puts v in buffer buf at off with a row stride pad floats longer
// than its rows.
func place(v View, buf, off, pad int) View {
	v.Buf, v.Off, v.Stride = buf, off, v.Cols+pad
	return v
}
