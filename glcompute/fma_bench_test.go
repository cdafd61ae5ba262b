package glcompute

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// fmaPeak is a compute shader of multiply-adds alone, in registers: each
// invocation runs chains independent chains of n steps and writes their
// sum, so that nothing is optimized away. T is float or double.
func fmaPeak(T string, chains int) string {
	decl, step, sum := "", "", ""
	for i := range chains {
		decl += fmt.Sprintf("\t%s a%d = %s(gl_GlobalInvocationID.x + %du) * %s(1e-9);\n", T, i, T, i, T)
		step += fmt.Sprintf("\t\ta%d = fma(a%d, m, c);\n", i, i)
		sum += fmt.Sprintf(" + a%d", i)
	}
	return fmt.Sprintf(`#version 430
layout(local_size_x = 256) in;
uniform uint n;
layout(std430, binding = 0) buffer O { %[1]s o[]; };
void main() {
	%[1]s m = %[1]s(0.999999), c = %[1]s(1e-7);
%[2]s	for (uint k = 0u; k < n; k++) {
%[3]s	}
	o[gl_GlobalInvocationID.x] = %[1]s(0)%[4]s;
}
`, T, decl, step, sum)
}

// BenchmarkFMAPeak measures the multiply-add rate a GLSL compute shader
// reaches on the device with no memory traffic, in float and double: the
// ceiling the fast and dfast kernels are held against (docs/PERFORMANCE.md,
// "The float64 ceiling"). On llvmpipe it measures the CPU's.
func BenchmarkFMAPeak(b *testing.B) {
	d := openDevice(b, BackendEGL)
	if d.Info().ES {
		b.Skip("double needs desktop OpenGL")
	}
	groups := 64 * max(1, d.info.SMCount)
	const n, chains = 4096, 8
	for _, T := range []string{"float", "double"} {
		b.Run(T, func(b *testing.B) {
			if T == "double" && d.float64Support() != nil {
				b.Skip(d.float64Support())
			}
			var best time.Duration
			d.call(func() {
				p, err := glw.NewComputeProgram("fmapeak", fmaPeak(T, chains))
				if err != nil {
					b.Fatal(err)
				}
				defer p.Release()
				out, ok := glw.NewStorageBuffer(8*256*groups, nil, glw.StaticRead)
				if !ok {
					b.Fatal("no buffer")
				}
				defer out.Release()
				p.Use()
				glw.SetUint(p.Uniform("n"), n)
				out.BindStorage(0)
				q := glw.NewQuery()
				defer q.Release()
				for i := 0; i < b.N+1; i++ { // the first untimed
					glw.Finish()
					start := time.Now()
					q.BeginTimeElapsed()
					glw.Dispatch(groups, 1)
					glw.EndTimeElapsed()
					glw.Finish()
					t := time.Since(start)
					if g := time.Duration(q.Nanoseconds()); g > time.Microsecond {
						t = g
					}
					if i > 0 && (best == 0 || t < best) {
						best = t
					}
				}
				var v [1]uint64
				out.Read(0, 8, unsafe.Pointer(&v[0]))
				glw.Program(0).Use()
			})
			flop := 2 * float64(n) * chains * 256 * float64(groups)
			b.ReportMetric(flop/best.Seconds()/1e12, "TFLOPS")
			b.ReportMetric(0, "ns/op")
		})
	}
}
