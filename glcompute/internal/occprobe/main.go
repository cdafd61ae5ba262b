// Command occprobe measures how many work groups of a fast kernel
// configuration NVIDIA's GL driver keeps resident on one multiprocessor at
// once (GL gives no register count or occupancy report): an instrumented
// copy of the kernel counts, per SM (gl_SMIDNV), the groups that have
// started and not yet finished, and keeps the maximum. It also times the
// uninstrumented kernel at n³ and reports which GLSL extensions the
// driver's compiler accepts for a list of names.
//
//	occprobe N CONFIG...
//	occprobe -ext NAME...
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/probe"
	"github.com/glmul/glmul/shaders"
	"github.com/go-gl/gl/v4.3-core/gl"
)

func init() { runtime.LockOSThread() }

func main() {
	probe.Context()
	fmt.Println(glw.Renderer(), glw.Version())
	if os.Args[1] == "-ext" {
		for _, name := range os.Args[2:] {
			src := "#version 450 core\n#extension " + name + " : require\nlayout(local_size_x = 32) in;\nvoid main() {}\n"
			_, err := glw.NewComputeProgram("ext.comp", src)
			fmt.Printf("%s: has=%v compiles=%v\n", name, glw.HasExtension(name), err == nil)
			if err != nil {
				fmt.Println("  ", strings.ReplaceAll(err.Error(), "\n", "\n   "))
			}
		}
		return
	}
	n, _ := strconv.Atoi(os.Args[1])
	data := make([]float32, n*n)
	for i := range data {
		data[i] = float32(i%7) - 3
	}
	ba, _ := glw.NewStorageBuffer(4*n*n, unsafe.Pointer(&data[0]), glw.StaticDraw)
	bc, _ := glw.NewStorageBuffer(4*n*n, nil, glw.StaticRead)
	bo, _ := glw.NewStorageBuffer(4*2*1024, nil, glw.StaticRead)
	for _, spec := range os.Args[2:] {
		k, err := shaders.Lookup("fast:" + spec)
		if err != nil {
			fmt.Println(err)
			continue
		}
		plain, err := glw.NewComputeProgram(k.File, k.Source)
		if err != nil {
			fmt.Println(spec, err)
			continue
		}
		src := strings.Replace(k.Source, "#version 430 core\n", "#version 430 core\n#extension GL_NV_shader_thread_group : require\n", 1)
		src = strings.Replace(src, "void main()\n{\n", "layout(std430, binding = 3) buffer ssbo_O { uint O[]; };\nvoid main()\n{\n    if (gl_LocalInvocationIndex == 0u) { uint s = gl_SMIDNV * 2u; uint c = atomicAdd(O[s], 1u) + 1u; atomicMax(O[s + 1u], c); }\n", 1)
		end := strings.LastIndex(src, "}")
		src = src[:end] + "    barrier();\n    if (gl_LocalInvocationIndex == 0u) { atomicAdd(O[gl_SMIDNV * 2u], 0xffffffffu); }\n}\n"
		inst, err := glw.NewComputeProgram(k.File, src)
		if err != nil {
			fmt.Println(spec, "instrumented:", err)
			continue
		}
		gx, gy := (n+k.TileN-1)/k.TileN, (n+k.TileM-1)/k.TileM
		setup := func(p glw.Program) {
			probe.SetSquare(p, n)
			ba.BindStorage(0)
			ba.BindStorage(1)
			bc.BindStorage(2)
			bo.BindStorage(3)
		}
		run := func() time.Duration {
			s := time.Now()
			glw.Dispatch(gx, gy)
			glw.Finish()
			return time.Since(s)
		}
		setup(plain)
		run()
		best := time.Hour
		for i := 0; i < 5; i++ {
			best = min(best, run())
		}
		zero := make([]uint32, 2*1024)
		gl.BufferSubData(gl.SHADER_STORAGE_BUFFER, 0, 4*len(zero), unsafe.Pointer(&zero[0]))
		setup(inst)
		bo.BindStorage(3)
		gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, uint32(bo))
		gl.BufferSubData(gl.SHADER_STORAGE_BUFFER, 0, 4*len(zero), unsafe.Pointer(&zero[0]))
		ibest := time.Hour
		for i := 0; i < 3; i++ {
			ibest = min(ibest, run())
		}
		out := make([]uint32, 2*1024)
		bo.Read(0, 4*len(out), unsafe.Pointer(&out[0]))
		hist := map[uint32]int{}
		sms := 0
		for s := 0; s < 1024; s++ {
			if out[2*s+1] > 0 {
				sms++
				hist[out[2*s+1]]++
			}
		}
		fmt.Printf("%-22s threads %3d smem %5d B: %.2f TFLOPS (instrumented %.2f); SMs used %d; max resident groups per SM: %v; GL error %v\n",
			spec, k.Threads, k.SharedBytes, 2*float64(n)*float64(n)*float64(n)/best.Seconds()/1e12,
			2*float64(n)*float64(n)*float64(n)/ibest.Seconds()/1e12, sms, hist, glw.CheckError("probe"))
		plain.Release()
		inst.Release()
	}
}
