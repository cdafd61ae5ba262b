package conformance

import (
	"strings"
	"testing"
)

// cpuGemm is a correct float64-accumulating GemmRunner, and the base of
// the broken ones below.
func cpuGemm(bufs [][]float32, g GemmCase) error {
	m, n, k := g.dims()
	out := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			if g.Alpha != 0 {
				for p := 0; p < k; p++ {
					ai, bi := g.A.at(i, p), g.B.at(p, j)
					if g.TransA {
						ai = g.A.at(p, i)
					}
					if g.TransB {
						bi = g.B.at(j, p)
					}
					s += float64(bufs[g.A.Buf][ai]) * float64(bufs[g.B.Buf][bi])
				}
				s *= float64(g.Alpha)
			}
			if g.Beta != 0 {
				s += float64(g.Beta) * float64(bufs[g.C.Buf][g.C.at(i, j)])
			}
			out[i*n+j] = float32(s)
		}
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			bufs[g.C.Buf][g.C.at(i, j)] = out[i*n+j]
		}
	}
	return nil
}

func TestCheckGemmPassesTheReference(t *testing.T) {
	for _, g := range GemmCases() {
		if err := CheckGemm(g, 1, cpuGemm); err != nil {
			t.Fatal(err)
		}
	}
}

// The harness must fail broken products; a check that cannot fail is no
// check.
func TestCheckGemmCatchesBrokenRunners(t *testing.T) {
	var g GemmCase
	for _, c := range GemmCases() {
		if c.Name == "37x29x53/one-buffer" && c.TransA && !c.TransB && c.Alpha == -0.5 && c.Beta == 0.25 {
			g = c
		}
	}
	broken := map[string]struct {
		run  GemmRunner
		want string
	}{
		"writes-a-gap": {func(b [][]float32, g GemmCase) error {
			cpuGemm(b, g)
			b[g.C.Buf][g.C.at(3, g.C.Cols)] = 0 // the stride gap after row 3
			return nil
		}, "C's row 3 stride gap"},
		"writes-an-input": {func(b [][]float32, g GemmCase) error {
			cpuGemm(b, g)
			b[g.A.Buf][g.A.at(0, 0)] += 1
			return nil
		}, "A[0,0]"},
		"ignores-beta": {func(b [][]float32, g GemmCase) error {
			g.Beta = 0
			return cpuGemm(b, g)
		}, "elements of the result wrong"},
		"ignores-transpose": {func(b [][]float32, g GemmCase) error {
			g.TransA = false
			g.A.Rows, g.A.Cols = g.A.Cols, g.A.Rows // same floats, read the other way
			g.A.Stride = g.A.Cols
			return cpuGemm(b, g)
		}, "wrong"},
		"skips-last-row": {func(b [][]float32, g GemmCase) error {
			saved := append([]float32(nil), b[g.C.Buf]...)
			cpuGemm(b, g)
			last := g.C.Rows - 1
			copy(b[g.C.Buf][g.C.at(last, 0):g.C.at(last, g.C.Cols)], saved[g.C.at(last, 0):])
			return nil
		}, "C[36,"},
	}
	for name, x := range broken {
		err := CheckGemm(g, 1, x.run)
		if err == nil || !strings.Contains(err.Error(), x.want) {
			t.Errorf("%s: err = %v, want one naming %q", name, err, x.want)
		}
	}
}

// cpuBatch is a correct BatchRunner.
func cpuBatch(bufs [][]float32, c BatchCase) error {
	for p := 0; p < c.Count; p++ {
		for i := 0; i < c.M; i++ {
			for j := 0; j < c.N; j++ {
				var s float64
				if c.Alpha != 0 {
					for k := 0; k < c.K; k++ {
						s += float64(bufs[c.A.Buf][c.atA(p, i, k)]) * float64(bufs[c.B.Buf][c.atB(p, k, j)])
					}
					s *= float64(c.Alpha)
				}
				if c.Beta != 0 {
					s += float64(c.Beta) * float64(bufs[c.C.Buf][c.atC(p, i, j)])
				}
				bufs[c.C.Buf][c.atC(p, i, j)] = float32(s)
			}
		}
	}
	return nil
}

func TestCheckBatch(t *testing.T) {
	for _, c := range BatchCases() {
		if err := CheckBatch(c, 1, cpuBatch); err != nil {
			t.Fatal(err)
		}
	}
	c := BatchCases()[len(BatchCases())-1] // mat3, accumulating
	for name, run := range map[string]BatchRunner{
		"compact-rows": func(b [][]float32, c BatchCase) error {
			c.LdA, c.LdB, c.LdC = c.K, c.N, c.N
			return cpuBatch(b, c)
		},
		"no-accumulate": func(b [][]float32, c BatchCase) error {
			c.Beta = 0
			return cpuBatch(b, c)
		},
	} {
		if err := CheckBatch(c, 1, run); err == nil {
			t.Errorf("%s: a broken batch passed", name)
		}
	}
}
