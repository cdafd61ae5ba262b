package glcompute

import (
	"os"
	"slices"
	"strings"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// Mesa's zink builds variants of a shader with the uniforms it compares
// inlined, by default on CPU devices (lavapipe), and after a switch of
// compute programs can run a variant made for earlier values: wrong
// products, no error (docs/DRIVERS.md, "zink and float64"). Turning the
// inlining off (ZINK_INLINE_UNIFORMS=0, read when zink makes its screen)
// cures it; glcompute does so for the contexts it makes, unless the
// variable is set, and probes the context for the fault: where it shows,
// float64 products are refused.
const zinkInlineEnv = "ZINK_INLINE_UNIFORMS"

// avoidZinkInlining turns zink's uniform inlining off for the contexts
// made after it, unless the environment says otherwise. Other drivers do
// not read the variable.
func avoidZinkInlining() {
	if _, set := os.LookupEnv(zinkInlineEnv); !set {
		os.Setenv(zinkInlineEnv, "0")
	}
}

// Two compute programs that compare their uniforms in a loop and a branch,
// what zink inlines: sum writes 1+2+…+n to the first m words of its
// buffer, fill writes 7 to the first count of its own.
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

// zinkProbe runs the smallest sequence found that zink with inlined
// uniforms (Mesa 22.3, lavapipe) runs wrong: the two programs in turn,
// each uniform set before every dispatch; the fourth sum runs with an
// earlier n. It returns the steps that came out wrong, or an error where
// it could not run. On the device thread, with a desktop context; it
// leaves a borrowed context's bindings as it found them.
func (d *Device) zinkProbe() (wrong []int, err error) {
	// Saved before anything is made: making a buffer binds it to the copy
	// target (TestBorrowedEGL on zink caught a host's binding lost so).
	if d.borrowed {
		s := glw.SaveState(stateBindings)
		defer s.Restore()
	} else {
		defer glw.Buffer(0).BindStorage(0)
		defer glw.Program(0).Use()
	}
	sum, err := glw.NewComputeProgram("zinkSum", zinkSum)
	if err != nil {
		return nil, err
	}
	defer sum.Release()
	filler, err := glw.NewComputeProgram("zinkFill", zinkFill)
	if err != nil {
		return nil, err
	}
	defer filler.Release()
	zero := make([]uint32, 64)
	out, ok1 := glw.NewStorageBuffer(4*len(zero), unsafe.Pointer(&zero[0]), glw.StaticDraw)
	other, ok2 := glw.NewStorageBuffer(4*len(zero), unsafe.Pointer(&zero[0]), glw.StaticDraw)
	defer out.Release()
	defer other.Release()
	if !ok1 || !ok2 {
		return nil, d.checkError("the zink probe's buffers")
	}
	for i, s := range []struct{ count, n, m uint32 }{{3, 1, 3}, {3, 1, 2}, {1, 2, 3}, {2, 2, 1}} {
		filler.Use()
		glw.SetUint(filler.Uniform("count"), s.count)
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
			wrong = append(wrong, i)
		}
	}
	return wrong, d.checkError("the zink probe")
}

// zinkFault reports whether the context is zink's and runs zinkProbe
// wrong (or could not run it).
func (d *Device) zinkFault() bool {
	if !d.onZink() || d.info.ES {
		return false
	}
	wrong, err := d.zinkProbe()
	return err != nil || len(wrong) > 0
}

// lateMappedWrites reports whether a kernel's writes into a persistently
// mapped buffer may reach the host after the fence that follows them:
// on zink (Mesa 22.3.6 over lavapipe) a pass that wrote a pinned matrix's C
// directly left C unwritten when its fence had passed and glFinish had
// returned, its values arriving moments later (docs/DRIVERS.md,
// "zink and kernel writes to mapped memory"). GPU copies into such
// buffers arrive in time, so there C goes through a copy.
func (d *Device) lateMappedWrites() bool { return d.onZink() }

// onZink reports whether the context is Mesa's zink (OpenGL over Vulkan).
func (d *Device) onZink() bool { return strings.Contains(d.info.Renderer, "zink") }
