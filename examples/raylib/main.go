// Command raylib multiplies matrices with glmul inside a raylib program,
// on raylib's own OpenGL context: the embedding a game engine does.
// raylib (through raylib-go) compiles its own copy of GLFW's C sources;
// glcompute links no windowing library of its own, so the two link
// together with no linker flags.
//
// It is a module of its own (raylib is no dependency of glmul's):
//
//	cd examples/raylib
//	go build -tags "opengl43 x11" .   # raylib's OpenGL 4.3 back end: compute shaders
//	./raylib -frames 120              # under Xvfb on a server: xvfb-run -a ./raylib -frames 3
//
// Each frame queues C = A·B + ½·C on the GPU (matrices resident, wrapped
// and owned) and draws; the first frames' results are read back and
// checked element by element against a float64 product. Exit status 0
// only if every check passed.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"time"
	"unsafe"

	rl "github.com/gen2brain/raylib-go/raylib"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
)

func init() { runtime.LockOSThread() } // raylib's context lives on the main thread

func main() { os.Exit(run()) }

func run() int {
	frames := flag.Int("frames", 0, "frames to run (0: until the window is closed)")
	n := flag.Int("n", 192, "matrix size")
	check := flag.Int("check", 3, "frames whose product is read back and checked")
	flag.Parse()

	rl.SetTraceLogLevel(rl.LogWarning)
	rl.InitWindow(640, 360, "glmul inside raylib")
	defer rl.CloseWindow()
	if !rl.IsWindowReady() {
		fmt.Fprintln(os.Stderr, "raylib: no window (is a display available? try xvfb-run -a)")
		return 1
	}
	rl.SetTargetFPS(60)

	dev, err := glcompute.NewDeviceFromCurrent(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "glcompute:", err)
		return 1
	}
	defer dev.Release()
	info := dev.Info()
	fmt.Printf("context  %s | %s\n", info.Renderer, info.Version)

	rng := rand.New(rand.NewPCG(1, 2))
	a, b := cpu.Random(*n, *n, rng), cpu.Random(*n, *n, rng)
	c := cpu.Random(*n, *n, rng)
	ga, gb, gc, err := upload(dev, a, b, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "glcompute:", err)
		return 1
	}
	defer ga.Release()
	defer gb.Release()
	defer gc.Release()

	failed := 0
	got := cpu.New(*n, *n)
	var gemm time.Duration
	for frame := 0; *frames == 0 || frame < *frames; frame++ {
		if rl.WindowShouldClose() {
			break
		}
		t0 := time.Now()
		if err := gc.Gemm(blas.NoTrans, blas.NoTrans, 1, ga, gb, 0.5); err != nil { // C = A·B + ½·C
			fmt.Fprintln(os.Stderr, "glcompute: Gemm:", err)
			return 1
		}
		gemm += time.Since(t0)
		if frame < *check {
			if err := gc.Download(got); err != nil {
				fmt.Fprintln(os.Stderr, "glcompute: Download:", err)
				return 1
			}
			bad, worst := compare(got, a, b, c)
			status := "ok"
			if bad > 0 {
				status = "FAILED"
				failed++
			}
			fmt.Printf("frame %d  C = A·B + ½·C, %d×%d: %s, %d elements outside the bound, worst error %.3g of it\n", frame, *n, *n, status, bad, worst)
			c, got = got, c // the next frame's C is this one's result
		}
		rl.BeginDrawing()
		rl.ClearBackground(rl.RayWhite)
		rl.DrawRectangle(20, 20, 600, 320, rl.SkyBlue)
		rl.DrawText(fmt.Sprintf("glmul on raylib's context: %d×%d Gemm each frame", *n, *n), 40, 40, 20, rl.DarkBlue)
		rl.DrawText(fmt.Sprintf("frame %d, queueing took %v on average", frame+1, gemm/time.Duration(frame+1)), 40, 80, 20, rl.DarkBlue)
		rl.EndDrawing()
	}
	if failed > 0 {
		fmt.Printf("FAIL %d checked frame(s) wrong\n", failed)
		return 1
	}
	fmt.Printf("PASS raylib and glmul on one context (%s)\n", info.Backend)
	return 0
}

// upload puts A and B in matrices of glmul's and C in a buffer made as
// raylib makes buffers (rlLoadShaderBuffer), which glmul wraps in place.
func upload(dev *glcompute.Device, a, b, c blas32.General) (ga, gb, gc *glcompute.Matrix, err error) {
	if ga, err = dev.NewMatrix(a.Rows, a.Cols); err != nil {
		return
	}
	if gb, err = dev.NewMatrix(b.Rows, b.Cols); err != nil {
		return
	}
	if err = ga.Upload(a); err != nil {
		return
	}
	if err = gb.Upload(b); err != nil {
		return
	}
	buf := rl.LoadShaderBuffer(uint32(4*len(c.Data)), nil, rl.DynamicCopy)
	rl.UpdateShaderBuffer(buf, unsafe.Pointer(&c.Data[0]), uint32(4*len(c.Data)), 0)
	gc, err = dev.WrapBuffer(buf, 0, c.Rows, c.Cols, c.Stride)
	return
}

// compare counts the elements of got outside the error bound of A·B + ½·C
// computed in float64: (K+2)·u·(Σ|a·b| + ½|c|) with u = 2⁻²⁴.
func compare(got, a, b, c blas32.General) (bad int, worst float64) {
	ref, mag := cpu.Reference(a, b, false), cpu.Reference(a, b, true)
	for i := 0; i < got.Rows; i++ {
		for j := 0; j < got.Cols; j++ {
			cij := float64(c.Data[i*c.Stride+j])
			want := ref.Data[i*ref.Stride+j] + 0.5*cij
			tol := float64(a.Cols+2) * 0x1p-24 * (mag.Data[i*mag.Stride+j] + 0.5*math.Abs(cij))
			e := math.Abs(float64(got.Data[i*got.Stride+j]) - want)
			if !(e <= tol) {
				bad++
			}
			if tol > 0 {
				worst = math.Max(worst, e/tol)
			}
		}
	}
	return bad, worst
}
