package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/devgroup"
	"github.com/glmul/glmul/internal/outfile"
)

// deviceFlags are the flags that choose the OpenGL context, shared by every
// subcommand.
type deviceFlags struct {
	backend     string
	device      int
	verbose     bool
	ignoreTuned bool
	unseen      bool
	mapPerChunk bool
	programs    string // the program cache's directory; "": none
}

func (d *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.backend, "backend", "auto", "OpenGL context: auto|glfw|egl|gles (auto: a hidden GLFW window where a display exists, headless EGL otherwise; gles: OpenGL ES 3.1 through EGL)")
	fs.IntVar(&d.device, "device", 0, "EGL device `index` from -list-devices (0: a hardware GPU first, else Mesa's software device)")
	fs.BoolVar(&d.verbose, "v", false, "verbose: line-numbered shader source on compile errors")
	fs.BoolVar(&d.ignoreTuned, "ignore-tuned", false, "use the built-in fast kernel configuration, not the one glmul tune cached")
	fs.BoolVar(&d.unseen, "unseen", false, "run the GPU as one glmul never saw: the device model chooses the kernels from what OpenGL reports, no tuning cache, no vendor's measured choice (to judge the model)")
	fs.BoolVar(&d.mapPerChunk, "map-per-chunk", false, "stage matrices with glMapBufferRange per chunk, as on a GL 4.3 driver, not persistent mappings")
	fs.StringVar(&d.programs, "program-cache", defaultProgramCache(), "keep compiled kernels (the driver's program binaries) in `DIR` for later runs; \"\": compile every kernel")
}

func (d *deviceFlags) check() error {
	if d.device < 0 {
		return usagef("-device must be 0 (automatic) or an index from -list-devices (got %d)", d.device)
	}
	if d.device > 0 { // devgroup.Devices loads every EGL vendor's library (NVIDIA's: ~15 ms): only for -device
		if devs := devgroup.Devices(); len(devs) > 0 && d.device > len(devs) {
			return usagef("-device %d: EGL lists %s; glmul -list-devices names them", d.device, report.Plural(len(devs), "device"))
		}
	}
	switch glcompute.Backend(d.backend) {
	case "auto", glcompute.BackendGLFW, glcompute.BackendEGL, glcompute.BackendGLES:
	default:
		return usagef("-backend: unknown backend %q: use auto, glfw, egl or gles", d.backend)
	}
	// A cache that cannot be written costs only compile time and is not
	// reported (glcompute drops the error); but a path that is not a
	// directory at all is a mistake to name, not a cache to use.
	if d.programs != "" {
		fi, err := os.Stat(d.programs)
		switch {
		case err == nil && !fi.IsDir():
			return usagef("-program-cache %s: is a file, not a directory; name a directory (created if absent), or \"\" to compile every kernel", d.programs)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return usagef("-program-cache %s: %v; name a directory (created if absent), or \"\" to compile every kernel", d.programs, outfile.Pathless(err))
		}
	}
	return nil
}

func (d *deviceFlags) open() (*glcompute.Device, error) {
	return glcompute.Open(&glcompute.Options{Backend: glcompute.Backend(d.backend), Device: d.device,
		Verbose: d.verbose, IgnoreTuned: d.ignoreTuned, Unseen: d.unseen, NoPersistentMapping: d.mapPerChunk, ProgramCache: d.programs})
}

// newCommand returns the flag set of a glmul subcommand: parse errors are
// reported once by exitCode (with a pointer to -h), and -h prints what the
// command does (about), its usage lines and then the flags to help (stdout:
// asked for, so not a diagnostic, and readable through a pager).
func newCommand(name, about string, usage []string, help io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(help, "%s\n\nUsage:\n", about)
		for _, u := range usage {
			fmt.Fprintf(help, "  %s %s\n", name, u)
		}
		fmt.Fprint(help, "\nFlags:\n")
		fs.SetOutput(help)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// openFor opens the device and checks that each shape (m, k, n) can run
// with each kernel (Device.Plan), before anything is allocated.
func (d *deviceFlags) openFor(kernels []string, shapes ...[3]int) (*glcompute.Device, error) {
	dev, err := d.open()
	if err != nil {
		return nil, err
	}
	for _, s := range shapes {
		for _, k := range kernels {
			if _, err := dev.Plan(s[0], s[1], s[2], &glcompute.MulOptions{Kernel: k}); err != nil {
				dev.Release()
				return nil, err
			}
		}
	}
	return dev, nil
}

// parse parses a subcommand's args into fs (parseCommand) and checks the
// device flags.
func (d *deviceFlags) parse(fs *flag.FlagSet, args []string) error {
	if err := parseCommand(fs, args); err != nil {
		return err
	}
	return d.checkFor(fs.Name())
}

// checkFor is check for the command named cmd ("glmul bench"): its usage
// errors name the subcommand, as its other flags' do, so that the pointer
// to -h names the subcommand's.
func (d *deviceFlags) checkFor(cmd string) error {
	err := d.check()
	var u usageError
	if sub, ok := strings.CutPrefix(cmd, "glmul "); ok && errors.As(err, &u) {
		return usagef("%s: %s", sub, u.msg)
	}
	return err
}

// parseQuietly parses args into fs with its Usage silenced (the flag
// package calls it on -h and on every parse error), then prints the usage
// once for -h; a parse error is a usage error, reported by exitCode.
func parseQuietly(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		if sub, ok := strings.CutPrefix(fs.Name(), "glmul "); ok {
			return usagef("%s: %v", sub, err) // "bench: flag provided but not defined: -x"
		}
		return usageError{err.Error()}
	}
	return nil
}

// parseCommand parses args into fs: -h prints the usage and returns
// flag.ErrHelp (exit 0); a bad flag or a stray argument is a usage error.
func parseCommand(fs *flag.FlagSet, args []string) error {
	if err := parseQuietly(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", strings.TrimPrefix(fs.Name(), "glmul "), fs.Arg(0))
	}
	return nil
}

// checkWritable returns an error unless outfile can write path (see
// outfile.Check: a link's target's directory, a device in place, "-"),
// its directory made first when mkdir. It runs before long work, so that
// the work is not lost at the end.
func checkWritable(flag, path string, mkdir bool) error {
	if mkdir && path != outfile.Stdout {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("%s %s: cannot make its directory: %w", flag, path, err)
		}
	}
	if err := outfile.Check(path); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// noteKernelChoice prints one line on stderr when the device's default
// kernel is the built-in one because the tuning cache could not be used
// (unreadable, corrupt, or tuned for what no longer fits): no silent
// fallback.
func noteKernelChoice(dev *glcompute.Device, stderr io.Writer) {
	if _, problem, ok := strings.Cut(dev.Info().DefaultKernelSource, "; "); ok {
		fmt.Fprintf(stderr, "glmul: note: the built-in kernel configuration is used: %s\n", problem)
	}
}

// checkHostMemory returns an error if an m×k by k×n product's three
// float32 matrices would take more than the machine's memory (hostMemory;
// no check where that cannot be read): Go would otherwise crash
// allocating them.
func checkHostMemory(m, k, n int) error {
	need := productBytes(m, k, n)
	if total, ok := hostMemory(); ok && need > total {
		return fmt.Errorf("the %d×%d by %d×%d product needs %.1f GiB of host memory for A, B and C; this machine has %.1f GiB",
			m, k, k, n, need/(1<<30), total/(1<<30))
	}
	return nil
}

// productBytes is the size of an m×k by k×n product's A, B and C in
// float32, in float64 so that no size overflows.
func productBytes(m, k, n int) float64 {
	return 4 * (float64(m)*float64(k) + float64(k)*float64(n) + float64(m)*float64(n))
}

// hostMemory returns the machine's memory in bytes, /proc/meminfo's
// MemTotal; ok is false where that cannot be read.
func hostMemory() (bytes float64, ok bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			if kib, err := strconv.ParseFloat(f[1], 64); err == nil {
				return kib * 1024, true
			}
		}
	}
	return 0, false
}

// hostMemoryOr returns the machine's memory in bytes (hostMemory), or
// otherwise where that cannot be read.
func hostMemoryOr(otherwise float64) float64 {
	if b, ok := hostMemory(); ok {
		return b
	}
	return otherwise
}

// recordingWriter writes to w and keeps the first error: the usage that
// -h prints goes through one (run), so that a help that could not be
// written fails.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// defaultProgramCache returns the directory -program-cache defaults to, in
// the user's cache directory (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache
// on Linux, %LocalAppData% on Windows), "" where there is none.
func defaultProgramCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "glmul", "programs")
}
