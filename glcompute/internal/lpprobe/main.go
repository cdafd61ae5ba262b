// Command lpprobe measures how a register-tiled kernel without shared
// memory reads its inputs on Mesa llvmpipe: from storage buffers (tex 0)
// or through buffer textures (tex 1). llvmpipe 22.3 loads storage buffers
// and shared memory one SIMD lane at a time and texels with a gather; the
// texel path ran 1.6-2.9× faster at n = 1024 (docs/PERFORMANCE.md, "llvmpipe: the cpu
// kernel"), which is why shaders/cpu.comp reads through textures.
//
//	lpprobe N LX LY TM GN TEX ADJ
//
// N must be a multiple of the tile (no edge handling); ADJ 1 gives a lane's
// column vec4s a stride of LX (as cpu.comp), 0 contiguous ones.
package main

import (
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/probe"
	"github.com/go-gl/gl/v4.3-core/gl"
)

const head = `#version 430 core
layout(local_size_x = LX, local_size_y = LY) in;
uniform uint N;
layout(std430, binding = 2) writeonly buffer ssbo_R { vec4 R[]; };
#if TEX
uniform samplerBuffer At;
uniform samplerBuffer Bt;
#define LA(i) texelFetch(At, int(i))
#define LB(i) texelFetch(Bt, int(i))
#else
layout(std430, binding = 0) readonly buffer ssbo_A { vec4 A[]; };
layout(std430, binding = 1) readonly buffer ssbo_B { vec4 B[]; };
#define LA(i) A[i]
#define LB(i) B[i]
#endif
void main() {
	uint n4 = N / 4u;
	#if ADJ
	uint c4 = gl_WorkGroupID.x * uint(LX*GN) + gl_LocalInvocationID.x;
#define CJ(j) (uint(j)*uint(LX))
#else
	uint c4 = gl_GlobalInvocationID.x * uint(GN);
#define CJ(j) uint(j)
#endif
	uint r0 = gl_GlobalInvocationID.y * uint(TM);
	vec4 acc[TM][GN];
	for (int i = 0; i < TM; i++) for (int j = 0; j < GN; j++) acc[i][j] = vec4(0.0);
	for (uint k4 = 0u; k4 < n4; k4++) {
		vec4 a[TM];
		for (int i = 0; i < TM; i++) a[i] = LA((r0 + uint(i)) * n4 + k4);
		for (int kk = 0; kk < 4; kk++) {
			vec4 b[GN];
			for (int j = 0; j < GN; j++) b[j] = LB((k4 * 4u + uint(kk)) * n4 + c4 + CJ(j));
			for (int i = 0; i < TM; i++) for (int j = 0; j < GN; j++) acc[i][j] = fma(vec4(a[i][kk]), b[j], acc[i][j]);
		}
	}
	for (int i = 0; i < TM; i++) for (int j = 0; j < GN; j++) R[(r0 + uint(i)) * n4 + c4 + CJ(j)] = acc[i][j];
}`

func init() { runtime.LockOSThread() }

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	lx, _ := strconv.Atoi(os.Args[2])
	ly, _ := strconv.Atoi(os.Args[3])
	tm, _ := strconv.Atoi(os.Args[4])
	gn, _ := strconv.Atoi(os.Args[5])
	tex, _ := strconv.Atoi(os.Args[6])
	adj, _ := strconv.Atoi(os.Args[7])
	probe.Context()
	var tb, ta int32
	gl.GetIntegerv(gl.MAX_TEXTURE_BUFFER_SIZE, &tb)
	gl.GetIntegerv(gl.TEXTURE_BUFFER_OFFSET_ALIGNMENT, &ta)
	fmt.Println("max texture buffer texels", tb, "offset align", ta, glw.Integer64(gl.MAX_SHADER_STORAGE_BLOCK_SIZE))
	src := fmt.Sprintf("#version 430 core\n#define LX %d\n#define LY %d\n#define TM %d\n#define GN %d\n#define TEX %d\n#define ADJ %d\n", lx, ly, tm, gn, tex, adj) + head[len("#version 430 core\n"):]
	prog, err := glw.NewComputeProgram("lp.comp", src)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	a := make([]float32, n*n)
	b := make([]float32, n*n)
	r := rand.New(rand.NewSource(1))
	for i := range a {
		a[i], b[i] = r.Float32()-0.5, r.Float32()-0.5
	}
	ba, _ := glw.NewStorageBuffer(4*n*n, unsafe.Pointer(&a[0]), glw.StaticDraw)
	bb, _ := glw.NewStorageBuffer(4*n*n, unsafe.Pointer(&b[0]), glw.StaticDraw)
	bc, _ := glw.NewStorageBuffer(4*n*n, nil, glw.StaticRead)
	prog.Use()
	glw.SetUint(prog.Uniform("N"), uint32(n))
	ba.BindStorage(0)
	bb.BindStorage(1)
	bc.BindStorage(2)
	if tex == 1 {
		var t [2]uint32
		gl.GenTextures(2, &t[0])
		for i, buf := range []glw.Buffer{ba, bb} {
			gl.ActiveTexture(gl.TEXTURE0 + uint32(i))
			gl.BindTexture(gl.TEXTURE_BUFFER, t[i])
			gl.TexBuffer(gl.TEXTURE_BUFFER, gl.RGBA32F, uint32(buf))
		}
		gl.Uniform1i(prog.Uniform("At"), 0)
		gl.Uniform1i(prog.Uniform("Bt"), 1)
	}
	gx, gy := n/(lx*gn*4), n/(ly*tm)
	run := func() time.Duration {
		s := time.Now()
		glw.Dispatch(gx, gy)
		glw.Finish()
		return time.Since(s)
	}
	run()
	best := time.Hour
	for i := 0; i < 3; i++ {
		best = min(best, run())
	}
	out := make([]float32, n*n)
	bc.Read(0, 4*n*n, unsafe.Pointer(&out[0]))
	// check a few entries
	maxErr := 0.0
	for t := 0; t < 50; t++ {
		i, j := r.Intn(n), r.Intn(n)
		s := 0.0
		for k := 0; k < n; k++ {
			s += float64(a[i*n+k]) * float64(b[k*n+j])
		}
		maxErr = max(maxErr, abs(s-float64(out[i*n+j])))
	}
	fmt.Printf("n=%d LX=%d LY=%d TM=%d TN=%d tex=%d: %v %.2f GFLOPS maxerr %.2g (GL error: %v)\n", n, lx, ly, tm, gn*4, tex, best, 2*float64(n)*float64(n)*float64(n)/best.Seconds()/1e9, maxErr, glw.CheckError("the probe"))
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
