package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// BatchCase is Count products C[p] = α·A[p]·B[p] + β·C[p], each M×K by
// K×N, in an arena: product p's A starts at float A.Off + p·StrideA of
// buffer A.Buf with rows LdA apart; likewise B and C. (The views' Rows,
// Cols and Stride are unused.)
type BatchCase struct {
	Name                      string
	Arena                     Arena
	A, B, C                   View
	Count, M, K, N            int
	StrideA, StrideB, StrideC int
	LdA, LdB, LdC             int
	Alpha, Beta               float32
}

func (c BatchCase) String() string {
	return fmt.Sprintf("%s/%d×(%dx%dx%d)/a=%g/b=%g", c.Name, c.Count, c.M, c.K, c.N, c.Alpha, c.Beta)
}

func (c BatchCase) atA(p, i, k int) int { return c.A.Off + p*c.StrideA + i*c.LdA + k }
func (c BatchCase) atB(p, k, j int) int { return c.B.Off + p*c.StrideB + k*c.LdB + j }
func (c BatchCase) atC(p, i, j int) int { return c.C.Off + p*c.StrideC + i*c.LdC + j }

// BatchRunner runs one batch case on the implementation under test, as
// GemmRunner does.
type BatchRunner func(bufs [][]float32, c BatchCase) error

// CheckBatch runs c through run on seeded random contents (NaN where a
// product must not read: A and B for α = 0, C for β = 0) and reports
// elements of each C outside the float32 bound of the float64 reference
// and any other float of the arena that changed.
func CheckBatch(c BatchCase, seed uint64, run BatchRunner) error {
	rng := rand.New(rand.NewPCG(seed, uint64(c.Count*7919+c.M*101+c.K*11+c.N)))
	bufs := c.Arena.random(rng)
	nan := float32(math.NaN())
	for p := 0; p < c.Count; p++ {
		for i := 0; i < c.M; i++ {
			for k := 0; k < c.K; k++ {
				if c.Alpha == 0 {
					bufs[c.A.Buf][c.atA(p, i, k)] = nan
				}
			}
			for j := 0; j < c.N && c.Beta == 0; j++ {
				bufs[c.C.Buf][c.atC(p, i, j)] = nan
			}
		}
		for k := 0; k < c.K && c.Alpha == 0; k++ {
			for j := 0; j < c.N; j++ {
				bufs[c.B.Buf][c.atB(p, k, j)] = nan
			}
		}
	}
	before := clone2(bufs)
	gk := Gamma(c.K + 2)
	want := map[[2]int]expect{}
	for p := 0; p < c.Count; p++ {
		for i := 0; i < c.M; i++ {
			for j := 0; j < c.N; j++ {
				var s, mag float64
				if c.Alpha != 0 {
					for k := 0; k < c.K; k++ {
						x := float64(before[c.A.Buf][c.atA(p, i, k)]) * float64(before[c.B.Buf][c.atB(p, k, j)])
						s += x
						mag += math.Abs(x)
					}
					s *= float64(c.Alpha)
					mag *= math.Abs(float64(c.Alpha))
				}
				if c.Beta != 0 {
					cv := float64(c.Beta) * float64(before[c.C.Buf][c.atC(p, i, j)])
					s += cv
					mag += math.Abs(cv)
				}
				key := [2]int{c.C.Buf, c.atC(p, i, j)}
				if _, dup := want[key]; dup {
					panic("conformance: BatchCase products of C overlap: " + c.String())
				}
				want[key] = expect{fmt.Sprintf("C%d[%d,%d]", p, i, j), s, gk * mag}
			}
		}
	}
	if err := run(bufs, c); err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	describe := func(buf, idx int) string { return "not an element of any C" }
	if err := checkArena(bufs, before, want, describe); err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	return nil
}

// BatchCases is the table every batched implementation must pass: sizes
// 1 to 32 on both sides of the powers of two, compact and with row
// strides, α and β each zero and not, the std430 mat3 layout (columns
// padded to vec4: rows 4 floats apart, 12 floats a matrix), and A and B in
// one buffer with C in another at odd offsets and gaps between matrices.
func BatchCases() []BatchCase {
	var cases []BatchCase
	add := func(name string, count, m, k, n, ldPad int, alpha, beta float32) {
		c := BatchCase{Name: name, Count: count, M: m, K: k, N: n, Alpha: alpha, Beta: beta,
			LdA: k + ldPad, LdB: n + ldPad, LdC: n + ldPad}
		c.StrideA = (m-1)*c.LdA + k + 1
		c.StrideB = (k-1)*c.LdB + n + 2
		c.StrideC = (m-1)*c.LdC + n + 3
		c.A = View{Buf: 0, Off: 5}
		c.B = View{Buf: 0, Off: c.A.Off + (count-1)*c.StrideA + (m-1)*c.LdA + k + 3}
		c.C = View{Buf: 1, Off: 7}
		c.Arena = Arena{c.B.Off + (count-1)*c.StrideB + (k-1)*c.LdB + n + 4, c.C.Off + (count-1)*c.StrideC + (m-1)*c.LdC + n + 6}
		cases = append(cases, c)
	}
	for _, s := range [][3]int{{1, 1, 1}, {3, 3, 3}, {4, 4, 4}, {5, 7, 3}, {16, 1, 16}, {17, 15, 31}, {32, 32, 32}, {1, 32, 1}} {
		for _, pad := range []int{0, 3} {
			for _, ab := range [][2]float32{{1, 0}, {0, 0.5}, {-0.5, 1}, {2, 0.25}} {
				add(fmt.Sprintf("%dx%dx%d/ldpad=%d", s[0], s[1], s[2], pad), 37, s[0], s[1], s[2], pad, ab[0], ab[1])
			}
		}
	}
	// std430 mat3[]: each 3×3 stored as 3 vec4 columns; read row-major it
	// is the transpose, with rows 4 floats apart, 12 floats a matrix.
	mat3 := BatchCase{Name: "std430-mat3", Count: 50, M: 3, K: 3, N: 3, Alpha: 1, Beta: 0,
		LdA: 4, LdB: 4, LdC: 4, StrideA: 12, StrideB: 12, StrideC: 12,
		A: View{Buf: 0, Off: 0}, B: View{Buf: 1, Off: 0}, C: View{Buf: 2, Off: 0}, Arena: Arena{600, 600, 600}}
	cases = append(cases, mat3)
	acc := mat3
	acc.Name, acc.Alpha, acc.Beta = "std430-mat3-accumulate", 0.5, 1
	cases = append(cases, acc)
	return cases
}
