package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/schollz/progressbar/v3"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuner"
	"github.com/glmul/glmul/internal/cause"
	"github.com/glmul/glmul/validate"
)

// version is the release; a build from a git checkout adds its revision.
const version = "0.1.0"

// maxReps caps -reps in every command: each run's times are kept, and a
// billion runs would not end anyway.
const maxReps = 1_000_000

// maxWarmup caps the main command's -warmup: its runs are not bounded in
// time (measure.MaxWarmup bounds only the runs added after them), and
// the added runs raise an idle GPU's clocks without help, so more than a
// few are rarely of use; 10000 covers a third of a second of the shortest
// products on an H100 (about 30 µs a run at n = 128).
const maxWarmup = 10_000

// maxGroupsGL caps -max-groups: GL_MAX_COMPUTE_WORK_GROUP_COUNT is at
// least 65535 along each axis in every OpenGL 4.3 and ES 3.1 driver, and
// -max-groups applies to each axis, y included, where drivers allow no more
// (a larger value failed later, with exit status 1, on NVIDIA and Mesa).
const maxGroupsGL = 65535

// checkReps returns a usage error unless reps is 1 to maxReps; cmd
// ("bench: ", or "" for the main command) prefixes the message.
func checkReps(cmd string, reps int) error {
	if reps < 1 || reps > maxReps {
		return usagef("%s-reps must be 1 to %d (got %d)", cmd, maxReps, reps)
	}
	return nil
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errReported is a failure whose details were already printed (a failed
// validation after its report): exit status 1 with no further message.
var errReported = errors.New("failed")

// exitCode prints err and maps it to the exit status: 0 ok, 1 failure,
// 2 usage, 128 + the signal's number when interrupted (interruptedError:
// 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errReported):
		return 1
	}
	var stopped interruptedError
	if errors.As(err, &stopped) {
		fmt.Fprintf(stderr, "glmul: %v\n", err)
		return interruptedStatus(stopSignal())
	}
	var u usageError
	if errors.As(err, &u) {
		help := "glmul -h"
		for _, sub := range []string{"bench", "tune", "table", "mul", "devices"} {
			if strings.HasPrefix(u.msg, sub+":") || strings.HasPrefix(u.msg, sub+" ") {
				help = "glmul " + sub + " -h"
			}
		}
		fmt.Fprintf(stderr, "glmul: %v\nRun '%s' for usage.\n", err, help)
		return 2
	}
	fmt.Fprintf(stderr, "glmul: %v\n", err)
	if hint := hintFor(err); hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hint)
	}
	return 1
}

// hintFor returns a line on what to do about err, or "". It reads the
// environment: there a Mesa override variable, not the driver, may be
// what caps the version.
func hintFor(err error) string { return hintOn(err, runtime.GOOS) }

// hintOn is hintFor on operating system goos. It reads the library's
// causes (internal/cause), never its error text.
func hintOn(err error, goos string) string {
	is := func(c error) bool { return errors.Is(err, c) }
	switch {
	case goos == "windows" && is(cause.NoEGL):
		return "on Windows glmul makes its context through GLFW (WGL): leave -backend out, or use -backend glfw"
	case goos == "windows" && errors.Is(err, glcompute.ErrNoContext):
		return "glmul needs a desktop session and an OpenGL 4.3 driver: your GPU vendor's (NVIDIA, AMD, Intel); Windows' own driver stops at OpenGL 1.1"
	case goos == "windows" && is(cause.GLVersion):
		return "glmul needs OpenGL 4.3 compute shaders: install your GPU vendor's current driver (Windows Update's may lack OpenGL)"
	case is(cause.NoDisplay):
		return "-backend glfw needs a display (X11 or Wayland: DISPLAY or WAYLAND_DISPLAY); on a server use -backend egl (headless), or run glmul under xvfb-run"
	case is(cause.ESContext) && len(mesaOverrides("MESA_GLES_VERSION_OVERRIDE")) > 0:
		return overrideHint(mesaOverrides("MESA_GLES_VERSION_OVERRIDE"), "OpenGL ES 3.1 is needed")
	case errors.Is(err, glcompute.ErrNoContext):
		return "install an OpenGL 4.3 driver (on Debian/Ubuntu 'make deps' installs Mesa, which runs on the CPU), or choose a backend with -backend egl|glfw"
	case is(cause.GLVersion) && len(mesaOverrides("MESA_GL_VERSION_OVERRIDE", "MESA_GLSL_VERSION_OVERRIDE")) > 0:
		set := mesaOverrides("MESA_GL_VERSION_OVERRIDE", "MESA_GLSL_VERSION_OVERRIDE")
		hint := overrideHint(set, "OpenGL 4.3 core and GLSL 4.30 are needed")
		if !strings.HasPrefix(set[0], "MESA_GL_VERSION_OVERRIDE=") {
			// The GLSL cap alone: the error names the version of the
			// compatibility context glcompute probed with, 4.5 on Mesa 22
			// llvmpipe, which reads as if the driver were at fault.
			hint += "; below GLSL 4.30 Mesa makes no 4.3 core context, whatever OpenGL version it reports"
		}
		return hint
	case is(cause.GLVersion):
		return "glmul needs OpenGL 4.3 compute shaders: a GPU driver from 2012 or later, or Mesa 20+ (llvmpipe) on the CPU"
	case is(cause.NoFloat64):
		return "-type f64 needs desktop OpenGL (4.0 or later): use -backend egl or glfw (or leave -backend out), or multiply in float32 (-type f32)"
	case is(cause.NoPersistentMapping):
		return "-mapped needs glBufferStorage (OpenGL 4.4; OpenGL ES has it only through EXT_buffer_storage): leave -mapped out, or use -backend egl or glfw for desktop OpenGL"
	case is(cause.KernelOverLimits):
		return "choose a smaller fast configuration (glmul tune -show names the one this device uses)"
	case is(cause.NoPanels):
		return "use -kernel fast: it runs products of any size in panels"
	case is(cause.BindingTooSmall):
		return "raise -max-binding (or choose a smaller tile configuration)"
	case is(cause.GPUMemoryCap):
		return "raise -max-gpu-mem"
	case is(cause.SplitKOverCap):
		return "raise -max-gpu-mem, or drop -split-k (-split-k 0 splits only where the cap leaves room)"
	}
	return ""
}

// mesaOverrides returns NAME=value for each variable of names (Mesa's
// version overrides) that the environment sets.
func mesaOverrides(names ...string) []string {
	var set []string
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			set = append(set, n+"="+v)
		}
	}
	return set
}

// overrideHint says that the override variables set cap the version Mesa
// offers, below what is needed, and to unset them.
func overrideHint(set []string, needed string) string {
	caps, it := "caps", "it"
	if len(set) > 1 {
		caps, it = "cap", "them"
	}
	return fmt.Sprintf("%s in the environment %s the version Mesa offers (%s): unset %s", strings.Join(set, " and "), caps, needed, it)
}

// options are the flags of the main command.
type options struct {
	n           int
	shape       string
	reps        int
	warmup      int
	validate    string
	dev         deviceFlags
	maxGroups   int
	splitK      int
	kernel      string
	seed        uint64
	format      string
	version     bool
	listDevices bool
	progress    string
	dumpProgram string
	maxBinding  string
	maxGPUMem   string
	mapped      bool
	devices     string // -devices: "" for one device
	typ         string // -type: f32 or f64
	binding     int64  // parsed -max-binding
	gpuMem      int64  // parsed -max-gpu-mem

	nSet        bool // -n was on the command line
	devicesSet  bool // -devices was on the command line (perhaps empty)
	m, k, nCols int  // the parsed shape
}

func newFlagSet(o *options, help io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("glmul", flag.ContinueOnError)
	// Parse errors are printed by exitCode, once, with a pointer to -h; the
	// full usage only on -h.
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.n, "n", 0, "multiply two `N`×N matrices")
	fs.StringVar(&o.shape, "shape", "", "multiply an M×K matrix A by a K×N matrix B, given as `MxKxN` (e.g. 100x77x130)")
	fs.IntVar(&o.reps, "reps", 10, fmt.Sprintf("timed runs, 1 to %d; the report gives their mean (as the paper did), median and min", maxReps))
	fs.IntVar(&o.warmup, "warmup", 1, fmt.Sprintf("untimed runs before the timed ones, 0 to %d, each in full however long it takes; then, if the context had done no work for 0.5 s, more until 0.5 s has passed since the warm-up began; then batches of 30 runs (1 to 5 ms) until their times are steady, none begun after 0.8 s; on a CPU device (llvmpipe) the runs alone (0: none of this); with -devices, whole untimed products over the group and nothing more", maxWarmup))
	fs.StringVar(&o.validate, "validate", "auto", "check the product on the CPU: auto|full|freivalds|none (auto: full up to 1024³ multiply-adds, freivalds above)")
	o.dev.register(fs)
	fs.IntVar(&o.splitK, "split-k", 0, "split the inner dimension `S` ways (fast kernel), for results too small to fill the GPU; 0: automatic (grids under about a wave of work groups: 128 on a GPU, the CPU's threads on llvmpipe; where the driver reports its multiprocessors, NVIDIA, also grids whose last wave is poorly filled); 1: no split")
	fs.IntVar(&o.maxGroups, "max-groups", tuner.MaxGroups, "at most this many work groups per dispatch along each axis (the paper's TDR cap)")
	fs.StringVar(&o.kernel, "kernel", "fast", "compute shader: fast (tuned for the device), tiled32 (the paper's), fast:BMxBNxBK_TMxTN, or cpu:LXxLY_TMxTN (for OpenGL on a CPU)")
	fs.StringVar(&o.maxBinding, "max-binding", "", "run in panels whose matrices take at most `SIZE` bytes a binding (e.g. 1MiB; default: the driver's GL_MAX_SHADER_STORAGE_BLOCK_SIZE)")
	fs.StringVar(&o.maxGPUMem, "max-gpu-mem", "", "use at most `SIZE` bytes of GPU buffers (e.g. 8MiB, 2GiB), streaming panels when the product needs more (default: no cap)")
	fs.StringVar(&o.typ, "type", typeF32, typeUsage)
	fs.BoolVar(&o.mapped, "mapped", false, "make A, B and C in mapped host memory that the GPU copies directly (glcompute/pinned, like CUDA's pinned memory) instead of ordinary Go slices")
	fs.StringVar(&o.devices, "devices", "", "multiply over several GPUs: `LIST` is all (every GPU EGL lists; Mesa's software device where it lists none) or EGL device indices such as 1,2; C's column panels go to each GPU as it becomes free (default: one device, -device)")
	fs.StringVar(&o.dumpProgram, "dump-program", "", "write the driver's program binary of the kernel to `FILE` (- for stdout; NVIDIA's holds the assembly) and exit")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the random inputs (uniform on [-1, 1))")
	fs.StringVar(&o.format, "format", "text", "output: text|json|csv (-version, -list-devices, -dump-program: text|json)")
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto|on|off (auto: when stderr is a terminal)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVar(&o.listDevices, "list-devices", false, "list the EGL devices -device and -devices can select, and exit")
	fs.Usage = func() {
		fmt.Fprint(help, `glmul multiplies float32 matrices (float64 with -type f64) on the GPU with OpenGL
4.3 compute shaders, validates the product on the CPU and reports GFLOPS.

Usage:
  glmul -n N [flags]            C = A·B with A and B N×N
  glmul -shape MxKxN [flags]    A is M×K, B is K×N
  glmul mul -a A.npy -b B.mtx -o C.npy    multiply matrices from files
  glmul tune [flags]            find the fastest kernel configuration for this device
  glmul bench [flags]           GFLOPS of each kernel over a list of shapes
  glmul table [flags]           the paper's Table 1 and Fig. 3: naive CPU vs GPU
  glmul devices                 every OpenGL context reachable, and whether it qualifies

Flags:
`)
		fs.SetOutput(help)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		fmt.Fprint(help, `
Exit status: 0 ok, 1 failure (validation included), 2 usage error,
130 interrupted by Ctrl-C after printing what finished (143 for SIGTERM,
129 for SIGHUP, which stop it alike).
`)
	}
	return fs
}

// run runs glmul with args. The usage that -h prints goes to stdout
// through a writer that keeps its first error: a help that could not be
// written (glmul -h > /dev/full) fails, as any other output does.
func run(args []string, stdout, stderr io.Writer) error {
	w := &recordingWriter{w: stdout}
	err := runCommand(args, w, stderr)
	if errors.Is(err, flag.ErrHelp) && w.err != nil {
		return fmt.Errorf("writing the usage: %w", w.err)
	}
	return err
}

func runCommand(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "tune":
			return runTune(args[1:], stdout, stderr)
		case "bench":
			return runBench(args[1:], stdout, stderr)
		case "table":
			return runTable(args[1:], stdout, stderr)
		case "mul":
			return runMul(args[1:], stdout, stderr)
		case "devices":
			return runDevices(args[1:], stdout, stderr)
		case "help":
			return run([]string{"-h"}, stdout, stderr)
		}
	}
	var o options
	fs := newFlagSet(&o, stdout)
	if err := parseQuietly(fs, args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		o.nSet = o.nSet || f.Name == "n"
		o.devicesSet = o.devicesSet || f.Name == "devices"
	})
	if fs.NArg() > 0 {
		if a := fs.Arg(0); fs.NFlag() == 0 && a != "" && !strings.HasPrefix(a, "-") && strings.Trim(a, "0123456789x") != "" {
			return usagef("unknown command %q: glmul's commands are mul, bench, tune, table, devices and help", a)
		}
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.version || o.listDevices || o.dumpProgram != "" {
		return printAndExit(&o, stdout)
	}
	if err := o.check(); err != nil {
		return err
	}
	return multiply(&o, stdout, stderr)
}

// check validates the flags and parses the shape.
func (o *options) check() error {
	switch {
	case o.n != 0 && o.shape != "":
		return usagef("give -n or -shape, not both")
	case o.shape != "":
		m, k, n, err := parseShape(o.shape)
		if err != nil {
			return err
		}
		o.m, o.k, o.nCols = m, k, n
	case o.n < 0 || o.n == 0 && o.nSet:
		return usagef("-n must be at least 1 (got %d)", o.n)
	case o.n > 0:
		o.m, o.k, o.nCols = o.n, o.n, o.n
	default:
		return usagef("give a size: -n N for N×N matrices, or -shape MxKxN")
	}
	if err := checkReps("", o.reps); err != nil {
		return err
	}
	if o.warmup < 0 || o.warmup > maxWarmup {
		return usagef("-warmup must be 0 to %d (got %d)", maxWarmup, o.warmup)
	}
	if o.splitK < 0 {
		return usagef("-split-k must be 0 or more (got %d)", o.splitK)
	}
	if o.splitK > 1 && o.kernel == "tiled32" {
		return usagef("-split-k needs a fast kernel; tiled32 cannot split K")
	}
	if o.maxGroups < 1 || o.maxGroups > maxGroupsGL {
		return usagef("-max-groups must be 1 to %d, the most work groups along an axis that every OpenGL 4.3 driver allows a dispatch (got %d)", maxGroupsGL, o.maxGroups)
	}
	if err := o.dev.check(); err != nil {
		return err
	}
	if _, err := validate.ParseMode(o.validate); err != nil {
		return usagef("-validate: %v", err)
	}
	if _, err := report.CheckFormat(o.format, report.Text, report.JSON, report.CSV); err != nil {
		return usagef("-format: %v", err)
	}
	if err := o.checkTypeAndKernel(); err != nil {
		return err
	}
	if err := checkProgress("", o.progress); err != nil {
		return err
	}
	var err error
	if o.binding, err = parseBytes("-max-binding", o.maxBinding); err != nil {
		return err
	}
	if o.gpuMem, err = parseBytes("-max-gpu-mem", o.maxGPUMem); err != nil {
		return err
	}
	if o.devices != "" || o.devicesSet { // -devices "" is a mistake, not one device
		return o.checkGroupFlags()
	}
	return nil
}

// parseBytes reads a size: a whole number of bytes, or one followed by
// KiB, MiB or GiB; "" is 0 (no limit).
func parseBytes(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || v < 1 || v > (1<<50)/mult {
		return 0, usagef("%s %s: want a size such as 65536, 64KiB, 8MiB or 2GiB", flag, s)
	}
	return v * mult, nil
}

// parseShape reads -shape's "MxKxN" (also with X or ×).
func parseShape(s string) (m, k, n int, err error) { return parseShapeOf("-shape", s) }

// parseShapeOf reads "MxKxN" (also with X or ×) given to flag, which the
// errors name.
func parseShapeOf(flag, s string) (m, k, n int, err error) {
	norm := strings.NewReplacer("×", "x", "X", "x").Replace(s)
	parts := strings.Split(norm, "x")
	if len(parts) != 3 {
		return 0, 0, 0, usagef("%s %s: want MxKxN, three sizes such as 100x77x130 (A is M×K, B is K×N)", flag, s)
	}
	var dims [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if errors.Is(err, strconv.ErrRange) {
			return 0, 0, 0, usagef("%s %s: %s is too large for a dimension", flag, s, p)
		}
		if err != nil {
			return 0, 0, 0, usagef("%s %s: %q is not a whole number", flag, s, p)
		}
		if v < 1 {
			return 0, 0, 0, usagef("%s %s: every dimension must be at least 1", flag, s)
		}
		dims[i] = v
	}
	return dims[0], dims[1], dims[2], nil
}

// multiply runs the main command.
func multiply(o *options, stdout, stderr io.Writer) error {
	if o.devices != "" {
		return multiplyGroup(o, stdout, stderr)
	}
	if o.typ == typeF64 {
		return multiply64(o, stdout, stderr)
	}
	if err := checkHostMemory(o.m, o.k, o.nCols); err != nil {
		return err
	}
	h, err := o.dev.hold(stderr, nil)
	if err != nil {
		return err
	}
	defer h.release()
	dev := h.Device
	if err := prepareDevice(o, dev); err != nil {
		return err
	}

	ctx, stop := notifyInterrupt()
	defer stop()
	mo, bar := measureOptions(ctx, o, stderr)
	var r measure.Result
	var releaseInputs func() // mapped inputs
	r, releaseInputs, h.abandoned, err = runProduct(ctx, o, dev, mo, stageBar(o.progress, stderr, "making A and B"), stderr)
	if !h.abandoned && releaseInputs != nil {
		defer releaseInputs()
	}
	if bar != nil && !h.abandoned {
		bar.Finish()
	}
	return reportProduct(ctx, o, dev, r, err, "", stdout, stderr)
}

// reportProduct ends glmul -n (float32 or, with what "float64 ",
// float64): err from the product, else r's report, and what Ctrl-C
// (ctx done) left unfinished.
func reportProduct(ctx context.Context, o *options, dev *glcompute.Device, r measure.Result, err error, what string, stdout, stderr io.Writer) error {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return interruptedError{fmt.Sprintf("nothing to report: the %s%d×%d×%d product stopped before it was measured and validated", what, o.m, o.k, o.nCols)}
	}
	if err != nil {
		return err
	}
	if err := writeProduct(o, dev, r, stdout, stderr); err != nil {
		return err
	}
	switch {
	case r.Interrupted(): // Ctrl-C during the timed runs: those made were reported
		return interruptedError{fmt.Sprintf("the report above holds the %d of %d runs made before it", len(r.Times), r.Timings.RunsAsked)}
	case ctx.Err() != nil: // during the pass or the validation, which ended
		return interruptedError{"the report above is complete: the signal came after the timed runs"}
	}
	return nil
}

// prepareDevice notes the kernel choice on stderr, refuses what cannot
// run before the inputs are made, and has dev prepare its staging buffers
// while they are, for inputs that will use them.
func prepareDevice(o *options, dev *glcompute.Device) error {
	if _, err := dev.Plan(o.m, o.k, o.nCols, &glcompute.MulOptions{Kernel: o.kernel, MaxBinding: o.binding, MaxGPUMemory: o.gpuMem, SplitK: o.splitK}); err != nil {
		return err
	}
	if 4*(o.m*o.k+o.k*o.nCols) >= tuner.StagingBytes {
		tuner.Of(dev).PrepareStaging() // while the inputs are made
	}
	return nil
}

// measureOptions returns the measurement the flags o ask for, stopped by
// ctx, and the progress bar on stderr that it steps (nil for none; then
// validation goes unannounced too).
func measureOptions(ctx context.Context, o *options, stderr io.Writer) (measure.Options, *progressbar.ProgressBar) {
	mode, _ := validate.ParseMode(o.validate)
	mo := measure.Options{KeepRuns: true, Kernel: o.kernel, MaxGroups: o.maxGroups, Warmup: o.warmup, Reps: o.reps, SplitK: o.splitK, Validate: mode,
		MaxBinding: o.binding, MaxGPUMemory: o.gpuMem, Context: ctx}
	bar := newBar(o.progress, stderr, "GPU runs")
	if bar != nil {
		mo.Progress = func(done, total int) {
			bar.ChangeMax(total)
			bar.Set(done)
		}
		mo.Validating = func(m validate.Mode) { fmt.Fprintf(stderr, "validating (%s, float64 on the CPU)...\n", m) }
		mo.ValidateProgress = stageBar(o.progress, stderr, "validating")
	}
	return mo, bar
}

// runProduct makes the inputs (calling inputs, if set, as they are
// made), runs the product on dev and validates it, all through
// awaitWork: Ctrl-C stops them within a second, even inside one long
// dispatch. release frees mapped inputs (nil for ordinary ones)
// once the caller is done with them. Where the work was abandoned it
// returns neither result nor release: the work's goroutine still holds
// them, and the caller must neither release dev nor wait for it.
func runProduct(ctx context.Context, o *options, dev *glcompute.Device, mo measure.Options, inputs func(done, total int), stderr io.Writer) (r measure.Result, release func(), abandoned bool, err error) {
	var res measure.Result
	var releaseInputs func()
	err, abandoned = awaitWork(ctx, stderr, "glmul", func() (err error) {
		var in *measure.Inputs
		if o.mapped {
			in, releaseInputs, err = measure.NewMappedInputs(dev, o.m, o.k, o.nCols, o.seed, inputs)
		} else {
			in = measure.MakeInputs(o.m, o.k, o.nCols, o.seed, inputs) // made while the device warms up
		}
		if err == nil {
			err = ctx.Err() // Ctrl-C while the mapped inputs were made
		}
		if err == nil {
			res, err = measure.Product(dev, in, mo)
		}
		return err
	})
	if abandoned {
		return measure.Result{}, nil, true, err
	}
	return res, releaseInputs, false, err
}

// writeProduct writes the report of r, the product measured on dev, to
// stdout in the format o asks for; a failed validation is then said on
// stderr, as an error already reported.
func writeProduct(o *options, dev *glcompute.Device, r measure.Result, stdout, stderr io.Writer) error {
	staging := tuner.Of(dev).Staging()
	switch {
	case o.mapped:
		staging = "A, B and C in mapped host memory (glcompute/pinned), copied by the GPU"
	case o.typ == typeF64:
		staging = "float64: every run one pipelined pass of glcompute.Device.Mul64 through the staging buffers"
	}
	rep := r.Report(dev.Info(), staging, o.seed, o.warmup, o.maxGroups)
	rep.SplitKAsked = o.splitK
	format := report.Format(o.format)
	if err := rep.Write(stdout, format); err != nil {
		return err
	}
	if err := r.Validation.Err(); err != nil {
		fmt.Fprintf(stderr, "glmul: %v\n", err)
		return errReported
	}
	return nil
}
