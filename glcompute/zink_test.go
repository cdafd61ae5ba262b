package glcompute

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// Two compute programs for TestZinkInlinedUniforms, nothing of glmul's:
// sum writes 1+2+…+n to the first m words of its buffer, fill writes 7
// to the first count of its own. Each compares its uniforms in a loop or
// a branch, which is what Mesa inlines.
const (
	zinkSum = `#version 430
layout(local_size_x = 64) in;
uniform uint n;
uniform uint m;
layout(std430, binding = 0) buffer O { uint o[]; };
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i < m) {
		uint s = 0u;
		for (uint k = 0u; k < n; k++) s += k + 1u;
		o[i] = s;
	}
}
`
	zinkFill = `#version 430
layout(local_size_x = 64) in;
uniform uint count;
layout(std430, binding = 0) buffer O { uint o[]; };
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i < count) o[i] = 7u;
}
`
)

// TestZinkInlinedUniforms is the smallest OpenGL sequence found that
// Mesa 22.3's zink (on lavapipe) runs wrong, the cause of glmul's refusal
// of float64 there (docs/DRIVERS.md, "zink and float64"): two compute
// programs used in turn, each uniform set before every dispatch, and the
// fourth sum runs with n = 1, an earlier value, as zink's variant of the
// program with its uniforms inlined. Every other driver must compute it
// right; on zink it must still come out wrong, else the refusal is to be
// looked at again.
func TestZinkInlinedUniforms(t *testing.T) {
	d := openDevice(t, BackendEGL)
	if d.Info().ES {
		t.Skip("GLSL 4.30 compute shaders")
	}
	type step struct{ count, n, m uint32 }
	seq := []step{{3, 1, 3}, {3, 1, 2}, {1, 2, 3}, {2, 2, 1}}
	var wrong []string
	d.call(func() {
		sum, err := glw.NewComputeProgram("zinkSum", zinkSum)
		if err != nil {
			t.Fatal(err)
		}
		defer sum.Release()
		fill, err := glw.NewComputeProgram("zinkFill", zinkFill)
		if err != nil {
			t.Fatal(err)
		}
		defer fill.Release()
		zero := make([]uint32, 64)
		out, ok1 := glw.NewStorageBuffer(4*len(zero), unsafe.Pointer(&zero[0]), glw.StaticDraw)
		other, ok2 := glw.NewStorageBuffer(4*len(zero), unsafe.Pointer(&zero[0]), glw.StaticDraw)
		defer out.Release()
		defer other.Release()
		if !ok1 || !ok2 {
			t.Fatal("no storage buffers")
		}
		for i, s := range seq {
			fill.Use()
			glw.SetUint(fill.Uniform("count"), s.count)
			other.BindStorage(0)
			glw.Dispatch(1, 1)
			glw.BarrierAll()
			sum.Use()
			glw.SetUint(sum.Uniform("n"), s.n)
			glw.SetUint(sum.Uniform("m"), s.m)
			out.WriteAt(0, 4*len(zero), unsafe.Pointer(&zero[0]))
			out.BindStorage(0)
			glw.Dispatch(1, 1)
			glw.BarrierAll()
			got, want := make([]uint32, len(zero)), make([]uint32, len(zero))
			out.Read(0, 4*len(got), unsafe.Pointer(&got[0]))
			for j := range s.m {
				want[j] = s.n * (s.n + 1) / 2
			}
			if !slices.Equal(got, want) {
				wrong = append(wrong, fmt.Sprintf("step %d (count %d; n %d, m %d): %v…, want %v…", i, s.count, s.n, s.m, got[:4], want[:4]))
			}
		}
		glw.Program(0).Use()
		glw.Buffer(0).BindStorage(0)
		if err := d.checkError("the inlined-uniform sequence"); err != nil {
			t.Fatal(err)
		}
	})
	zink := strings.Contains(d.Info().Renderer, "zink")
	inlining := !slices.Contains([]string{"0", "n", "no", "f", "false"}, strings.ToLower(os.Getenv("ZINK_INLINE_UNIFORMS")))
	switch {
	case zink && inlining && len(wrong) == 0:
		t.Errorf("%s computes the sequence right: see whether float64 products are right there too, and lift the refusal (checkFloat64, docs/DRIVERS.md, \"zink and float64\")", d.Info().Renderer)
	case zink && inlining:
		t.Logf("%s: zink's inlined-uniform fault, as known: %s", d.Info().Renderer, strings.Join(wrong, "; "))
	case len(wrong) > 0:
		t.Errorf("%s: %s", d.Info().Renderer, strings.Join(wrong, "; "))
	}
}
