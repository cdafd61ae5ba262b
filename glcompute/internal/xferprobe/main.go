// Command xferprobe measures whether a copy issued on a second, shared
// context overlaps a dispatch on the first (a driver's copy engine).
package main

import (
	"fmt"
	"os"
	"sort"
	"time"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/thread"
)

const src = `#version 430 core
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer O { float x[]; };
uniform uint iters;
void main() {
	float a = float(gl_GlobalInvocationID.x), b = 1.0001;
	for (uint i = 0u; i < iters; i++) { a = fma(a, b, 0.5); b = fma(b, 0.9999, 0.0001); }
	x[gl_GlobalInvocationID.y * 1048576u + gl_GlobalInvocationID.x] = a + b;
}`

func med(f func() time.Duration) time.Duration {
	var ts []time.Duration
	for i := 0; i < 7; i++ {
		ts = append(ts, f())
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[3]
}

// contexts makes a context current on t1 and a second, sharing its
// objects, current on t2.
func contexts() (t1, t2 *thread.OSThread, err error) {
	t1, t2 = thread.New(), thread.New()
	var c1, c2 *egl.Context
	t1.Call(func() {
		if c1, err = egl.NewContext(0, 4, 3); err == nil {
			err = c1.MakeCurrent()
		}
		if err == nil {
			err = glw.Init(egl.GetProcAddress)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	t1.Call(func() { c2, err = c1.NewShared() })
	if err != nil {
		return nil, nil, err
	}
	t2.Call(func() { err = c2.MakeCurrent() })
	return t1, t2, err
}

func main() {
	t1, t2, err := contexts()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("renderer:", func() (s string) { t1.Call(func() { s = glw.Renderer() }); return }())
	const size = 256 << 20
	var up, down, dev, out glw.Buffer
	var prog glw.Program
	t1.Call(func() {
		var p unsafe.Pointer
		up, p, _ = glw.NewMappedBuffer(size, glw.MapWrite)
		b := unsafe.Slice((*byte)(p), size)
		for i := range b {
			b[i] = byte(i)
		}
		down, _, _ = glw.NewMappedBuffer(size, glw.MapRead)
		dev, _ = glw.NewDeviceBuffer(size, true)
		out, _ = glw.NewDeviceBuffer(64<<20+size, true)
		prog, err = glw.NewComputeProgram("probe.comp", src)
		prog.Use()
		out.BindStorage(0)
		glw.Finish()
	})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	iters := uint32(200)
	dispatch := func() { glw.SetUint(prog.Uniform("iters"), iters); glw.Dispatch(4096, 4) }
	on1 := func(f func()) time.Duration {
		var d time.Duration
		t1.Call(func() { glw.Finish(); s := time.Now(); f(); glw.Finish(); d = time.Since(s) })
		return d
	}
	copyUp := func() { up.CopyTo(dev, 0, 0, size) }
	copyDown := func() { dev.CopyTo(down, 0, 0, size) }
	on1(copyUp)
	on1(dispatch)
	// calibrate the dispatch to about the copy's time
	cu := med(func() time.Duration { return on1(copyUp) })
	dd := med(func() time.Duration { return on1(dispatch) })
	iters = uint32(float64(iters) * float64(cu) / float64(dd))
	dd = med(func() time.Duration { return on1(dispatch) })
	cd := med(func() time.Duration { return on1(copyDown) })
	fmt.Printf("alone: copy up %v (%.1f GB/s), copy down %v (%.1f GB/s), dispatch %v\n", cu, size/cu.Seconds()/1e9, cd, size/cd.Seconds()/1e9, dd)
	fmt.Printf("one context, dispatch+copy up: %v\n", med(func() time.Duration { return on1(func() { dispatch(); copyUp() }) }))
	for _, c := range []struct {
		name string
		f    func()
	}{{"up", copyUp}, {"down", copyDown}, {"up+down", func() { copyUp(); copyDown() }},
		{"up into the dispatch's buffer, another region", func() { up.CopyTo(out, 0, 64<<20, size) }},
		{"down from the dispatch's buffer, another region", func() { out.CopyTo(down, 64<<20, 0, size) }}} {
		both := med(func() time.Duration {
			t1.Call(glw.Finish)
			t2.Call(glw.Finish)
			start := time.Now()
			done := make(chan time.Duration)
			go func() {
				t2.Call(func() { c.f(); glw.Finish() })
				done <- time.Since(start)
			}()
			t1.Call(func() { dispatch(); glw.Finish() })
			d1 := time.Since(start)
			d2 := <-done
			return max(d1, d2)
		})
		fmt.Printf("dispatch on context 1, copy %s on context 2 at once: %v\n", c.name, both)
	}
}
