// Command physics is a game engine's physics step with glmul inside it.
//
// The "engine" owns the GL context (a GLFW window where a display exists,
// a headless EGL context otherwise) and keeps N rigid bodies' 4×4 world
// transforms in its own buffer. Each step composes every body's transform
// with its per-step motion, W ← M·W, as one batched product of 4×4
// matrices on the GPU through a borrowed glcompute Device: no readback, no
// glFinish, no window of glmul's. The engine then draws the bodies straight
// from that buffer (in a window) and asserts that its own GL state is what
// it was before the step. At the end it checks the transforms against the
// same composition done on the CPU in float64.
//
//	go run ./examples/physics                   # window if DISPLAY is set
//	go run ./examples/physics -headless -steps 100
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"time"
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
	"github.com/go-gl/glfw/v3.3/glfw"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
)

func init() { runtime.LockOSThread() } // GL and GLFW want the main thread

func main() {
	err := run(os.Args[1:], os.Stdout)
	switch {
	case errors.Is(err, flag.ErrHelp): // -h: the usage is printed, and asked for
	case err != nil:
		fmt.Fprintln(os.Stderr, "physics:", err)
		os.Exit(1)
	}
}

// run runs the example with the command line args, reporting on stdout: it
// opens the engine's context, steps the bodies on the GPU through glmul,
// and checks the final transforms against float64 on the CPU.
func run(args []string, stdout io.Writer) error {
	opts, err := parseOptions(args)
	if err != nil {
		return err
	}
	window, releaseContext, err := openContext(opts.headless)
	if err != nil {
		return err
	}
	defer releaseContext()
	e, err := newEngine(opts.bodies)
	if err != nil {
		return err
	}
	dev, err := glcompute.NewDeviceFromCurrent(nil)
	if err != nil {
		return err
	}
	defer dev.Release()
	fmt.Fprintf(stdout, "physics: %d bodies on %s (%s)\n", opts.bodies, dev.Info().Renderer, dev.Info().BackendNote)
	sim, err := newSimulation(dev, e)
	if err != nil {
		return err
	}
	steps, gpuTotal, err := sim.runSteps(opts.steps, window, stdout)
	if err != nil {
		return err
	}
	reportMeanGPUTime(stdout, steps, gpuTotal)
	return e.verify(sim.world[steps%2], steps)
}

// options are the example's command-line settings.
type options struct {
	bodies   int  // rigid bodies, at least 1
	steps    int  // steps to run; 0 runs until the window closes
	headless bool // a headless EGL context instead of a window
}

// parseOptions parses the command line args. Headless is the default
// where there is no display, and a headless run defaults to 200 steps.
func parseOptions(args []string) (options, error) {
	fs := flag.NewFlagSet("physics", flag.ContinueOnError)
	bodies := fs.Int("bodies", 20000, "number of rigid bodies")
	steps := fs.Int("steps", 0, "steps to run (0: until the window closes; 200 headless)")
	headless := fs.Bool("headless", os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "", "no window: a headless EGL context")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if *bodies < 1 {
		return options{}, errors.New("-bodies must be at least 1")
	}
	if *steps < 0 {
		return options{}, fmt.Errorf("-steps must be 0 (until the window closes) or more (got %d)", *steps)
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *steps == 0 && *headless {
		*steps = 200
	}
	return options{bodies: *bodies, steps: *steps, headless: *headless}, nil
}

// openContext makes the engine's GL context current and loads the GL
// functions: a headless EGL context, or else a window, which it returns
// (nil when headless). release frees the context; on error nothing is
// left to free.
func openContext(headless bool) (window *glfw.Window, release func(), err error) {
	if headless {
		release, err := openHeadlessContext()
		return nil, release, err
	}
	return openWindow()
}

// openHeadlessContext makes a headless EGL context current and loads the
// GL functions from it; release frees the context.
func openHeadlessContext() (release func(), err error) {
	h, err := glcompute.NewHeadlessContext(0)
	if err != nil {
		return nil, err
	}
	if err := gl.InitWithProcAddrFunc(h.GetProcAddress); err != nil {
		h.Release()
		return nil, err
	}
	return h.Release, nil
}

// openWindow opens an 800×800 GLFW window with an OpenGL 4.3 core context,
// makes it current with vsync on and loads the GL functions from it;
// release terminates GLFW.
func openWindow() (window *glfw.Window, release func(), err error) {
	if err := glfw.Init(); err != nil {
		return nil, nil, err
	}
	glfw.WindowHint(glfw.ContextVersionMajor, 4)
	glfw.WindowHint(glfw.ContextVersionMinor, 3)
	glfw.WindowHint(glfw.OpenGLProfile, glfw.OpenGLCoreProfile)
	glfw.WindowHint(glfw.OpenGLForwardCompatible, glfw.True)
	w, err := glfw.CreateWindow(800, 800, "glmul physics: batched 4×4 transforms", nil, nil)
	if err != nil {
		glfw.Terminate()
		return nil, nil, err
	}
	w.MakeContextCurrent()
	glfw.SwapInterval(1)
	if err := gl.InitWithProcAddrFunc(glfw.GetProcAddress); err != nil {
		glfw.Terminate()
		return nil, nil, err
	}
	return w, glfw.Terminate, nil
}

// simulation is glmul's side of the engine: views, in place, of the
// engine's per-step motions and of its two world-transform buffers, which
// the steps use in turn as source and destination.
type simulation struct {
	engine *engine
	dev    *glcompute.Device
	motion *glcompute.Matrix
	world  [2]*glcompute.Matrix
	batch  glcompute.Batch // one 4×4 product per body
}

// newSimulation wraps e's buffers as glmul matrices on dev.
func newSimulation(dev *glcompute.Device, e *engine) (*simulation, error) {
	s := &simulation{engine: e, dev: dev, batch: glcompute.Batch{Count: e.bodies, M: 4, K: 4, N: 4}}
	var err error
	if s.motion, err = dev.WrapBuffer(e.motion, 0, e.bodies, 16, 16); err != nil {
		return nil, err
	}
	for i := range s.world {
		if s.world[i], err = dev.WrapBuffer(e.world[i], 0, e.bodies, 16, 16); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// runSteps runs steps steps, or with steps 0 until the window closes,
// printing the GPU time of every 50th step and of the last; in a window it
// draws the bodies after each step. It returns the number of steps done
// and their total GPU time.
func (s *simulation) runSteps(steps int, window *glfw.Window, stdout io.Writer) (int, time.Duration, error) {
	var gpuTotal time.Duration
	step := 0
	for ; steps == 0 || step < steps; step++ {
		if window != nil && window.ShouldClose() {
			break
		}
		gpu, err := s.step(step)
		if err != nil {
			return step, gpuTotal, err
		}
		gpuTotal += gpu
		if step%50 == 0 || (steps > 0 && step == steps-1) {
			fmt.Fprintf(stdout, "step %4d: GPU time of the batched product %v (GL timer; ≈0 on llvmpipe)\n", step, gpu)
		}
		if window != nil {
			s.engine.draw(s.engine.world[(step+1)%2], s.engine.bodies)
			window.SwapBuffers()
			glfw.PollEvents()
		}
	}
	return step, gpuTotal, nil
}

// step runs step number i: W ← M·W for every body as one batched product,
// timed by the engine's own GL timer query. It returns the GPU time, or an
// error if glmul left the engine's GL state changed.
func (s *simulation) step(i int) (time.Duration, error) {
	e := s.engine
	before := e.state()
	src, dst := s.world[i%2], s.world[(i+1)%2]
	gl.BeginQuery(gl.TIME_ELAPSED, e.query) // the engine's own timer
	if err := s.dev.MulBatched(dst, s.motion, src, s.batch); err != nil {
		return 0, err
	}
	gl.EndQuery(gl.TIME_ELAPSED)
	if after := e.state(); after != before {
		return 0, fmt.Errorf("step %d: glmul changed the engine's GL state: %+v → %+v", i, before, after)
	}
	var ns uint64
	gl.GetQueryObjectui64v(e.query, gl.QUERY_RESULT, &ns)
	return time.Duration(ns), nil
}

// reportMeanGPUTime prints the mean GPU time per step, if any step ran.
func reportMeanGPUTime(stdout io.Writer, steps int, gpuTotal time.Duration) {
	switch mean := gpuTotal / time.Duration(max(steps, 1)); {
	case steps == 0:
	case mean < time.Microsecond:
		// Mesa llvmpipe runs compute outside its GL timer, which then
		// reads about zero: no time is better than a false one.
		fmt.Fprintf(stdout, "physics: %d steps; the GL timer reads ≈0 on this driver (%v a step), so there is no GPU time to report\n", steps, mean)
	default:
		fmt.Fprintf(stdout, "physics: %d steps, mean GPU time per step %v\n", steps, mean)
	}
}

// engine is the host's side: its buffers, its program, its state.
type engine struct {
	bodies        int
	motion        uint32
	world         [2]uint32
	initial, move []float32
	program, vao  uint32
	query         uint32
}

type glState struct{ program, vao, ssbo, arrayBuffer int32 }

func (e *engine) state() glState {
	var s glState
	gl.GetIntegerv(gl.CURRENT_PROGRAM, &s.program)
	gl.GetIntegerv(gl.VERTEX_ARRAY_BINDING, &s.vao)
	gl.GetIntegerv(gl.SHADER_STORAGE_BUFFER_BINDING, &s.ssbo)
	gl.GetIntegerv(gl.ARRAY_BUFFER_BINDING, &s.arrayBuffer)
	return s
}

// newEngine makes the bodies: random positions, and per-step motions that
// rotate each body a little about the z axis around the origin.
func newEngine(n int) (*engine, error) {
	e := &engine{bodies: n, initial: make([]float32, 16*n), move: make([]float32, 16*n)}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < n; i++ {
		w := e.initial[16*i:]
		w[0], w[5], w[10], w[15] = 1, 1, 1, 1
		w[3], w[7], w[11] = float32(rng.Float64()*1.6-0.8), float32(rng.Float64()*1.6-0.8), 0
		th := 0.002 + 0.01*rng.Float64()
		m := e.move[16*i:]
		c, s := float32(math.Cos(th)), float32(math.Sin(th))
		m[0], m[1], m[4], m[5], m[10], m[15] = c, -s, s, c, 1, 1
	}
	newBuf := func(data []float32) uint32 {
		var b uint32
		gl.GenBuffers(1, &b)
		gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, b)
		gl.BufferData(gl.SHADER_STORAGE_BUFFER, 4*len(data), unsafe.Pointer(&data[0]), gl.DYNAMIC_DRAW)
		return b
	}
	e.motion = newBuf(e.move)
	e.world[0] = newBuf(e.initial)
	e.world[1] = newBuf(e.initial)
	gl.GenQueries(1, &e.query)
	gl.GenVertexArrays(1, &e.vao)
	gl.BindVertexArray(e.vao)
	p, err := program(vertexSrc, fragmentSrc)
	if err != nil {
		return nil, err
	}
	e.program = p
	gl.UseProgram(p) // an engine mid-frame has its program bound
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, e.world[0])
	return e, nil
}

// draw renders each body as a point read from the world buffer by the
// vertex shader: glmul's output used directly by the engine's draw.
func (e *engine) draw(world uint32, n int) {
	gl.ClearColor(0.05, 0.05, 0.08, 1)
	gl.Clear(gl.COLOR_BUFFER_BIT)
	gl.BindBufferBase(gl.SHADER_STORAGE_BUFFER, 0, world)
	gl.BindBuffer(gl.SHADER_STORAGE_BUFFER, e.world[0])
	gl.PointSize(2)
	gl.DrawArrays(gl.POINTS, 0, int32(n))
}

// verify downloads the final transforms and compares them with the same
// composition in float64 on the CPU.
func (e *engine) verify(world *glcompute.Matrix, steps int) error {
	got := blas32.General{Rows: e.bodies, Cols: 16, Stride: 16, Data: make([]float32, 16*e.bodies)}
	if err := world.Download(got); err != nil {
		return err
	}
	worst := 0.0
	for i := 0; i < e.bodies; i++ {
		var w, m [16]float64
		for j := range w {
			w[j], m[j] = float64(e.initial[16*i+j]), float64(e.move[16*i+j])
		}
		for s := 0; s < steps; s++ {
			var nw [16]float64
			for r := 0; r < 4; r++ {
				for c := 0; c < 4; c++ {
					for k := 0; k < 4; k++ {
						nw[4*r+c] += m[4*r+k] * w[4*k+c]
					}
				}
			}
			w = nw
		}
		for j := range w {
			worst = max(worst, math.Abs(float64(got.Data[16*i+j])-w[j]))
		}
	}
	// Each step rounds 4-term dot products of values ≤ 1 in magnitude:
	// about 4u per step, growing linearly: allow 8u·steps plus slack.
	tol := 8*math.Ldexp(1, -24)*float64(steps) + 1e-6
	fmt.Printf("physics: transforms after %d steps match float64 within %.2g (tolerance %.2g)\n", steps, worst, tol)
	if !(worst <= tol) {
		return fmt.Errorf("transforms differ from float64 by %.3g, over %.3g", worst, tol)
	}
	return nil
}

const vertexSrc = `#version 430 core
layout(std430, binding = 0) readonly buffer World { float w[]; };
void main() {
    uint b = uint(gl_VertexID) * 16u;
    gl_Position = vec4(w[b + 3u], w[b + 7u], w[b + 11u], 1.0);
}
` + "\x00"

const fragmentSrc = `#version 430 core
out vec4 color;
void main() { color = vec4(1.0, 0.75, 0.3, 1.0); }
` + "\x00"

func program(vs, fs string) (uint32, error) {
	compile := func(kind uint32, src string) (uint32, error) {
		s := gl.CreateShader(kind)
		cs, free := gl.Strs(src)
		gl.ShaderSource(s, 1, cs, nil)
		free()
		gl.CompileShader(s)
		var ok int32
		gl.GetShaderiv(s, gl.COMPILE_STATUS, &ok)
		if ok == gl.FALSE {
			buf := make([]byte, 1024)
			gl.GetShaderInfoLog(s, 1024, nil, &buf[0])
			return 0, fmt.Errorf("compiling the engine's shader: %s", buf)
		}
		return s, nil
	}
	v, err := compile(gl.VERTEX_SHADER, vs)
	if err != nil {
		return 0, err
	}
	f, err := compile(gl.FRAGMENT_SHADER, fs)
	if err != nil {
		return 0, err
	}
	p := gl.CreateProgram()
	gl.AttachShader(p, v)
	gl.AttachShader(p, f)
	gl.LinkProgram(p)
	return p, nil
}
