package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/cmd/glmul/internal/stream"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/outfile"
	"github.com/glmul/glmul/validate"
)

// mulFlags are glmul mul's flags, checked.
type mulFlags struct {
	dev           deviceFlags
	a, b, out     string
	allowOverflow bool
	kernel        string
	mode          validate.Mode
	format        report.Format
	progress      string // auto|on|off
}

// mulHelp is glmul mul's -h text.
const mulHelp = `glmul mul multiplies two matrices from files, C = A·B, on the GPU, validates
the product on the CPU and writes C. Files are NumPy .npy (float32 or float64:
dtype '<f4', '>f4', '<f8' or '>f8'; C or Fortran order) or MatrixMarket .mtx
(array or coordinate; real, integer or pattern; general or symmetric); the
output's extension chooses its format.

glmul computes in float32: float64 input is rounded. A float64 value beyond
float32's range (±3.4e38) is an error unless -allow-overflow; nonzero values
too small for float32 (below 1.4e-45) become 0, counted on stderr. NaN and
Inf in a file are data, kept (and C is then validated in full).
A coordinate .mtx file that lists a position more than once means the sum of
its entries (MatrixMarket's convention, as SciPy reads it): glmul sums them
and says on stderr how many entries were added to an earlier one.
C is float32 ('<f4' .npy, or "coordinate real general" .mtx listing every
element, row by row).

The product streams: A is read, multiplied and checked, and C written, in
panels of rows (at most 64 MiB of A and C rows a panel; three panels in host
memory and two on the GPU), so that memory holds B and the panels, not A and C
(a .mtx input is read whole). C is written to a temporary file beside -o and
renamed over it at the end: the file system needs C's size free, and an error,
a failed validation or Ctrl-C leaves -o as it was. Products up to 2^20
multiply-adds are validated in full, larger ones by Freivalds' method, panel by
panel. The report goes to stderr (to stdout with -format json).`

func parseMul(args []string, stderr io.Writer) (*mulFlags, error) {
	fs := newCommand("glmul mul", mulHelp, []string{"A.npy B.npy -o C.npy [flags]", "-a A.npy -b B.npy -o C.npy [flags]"}, stderr)
	f := &mulFlags{}
	f.dev.register(fs)
	fs.StringVar(&f.a, "a", "", "the left matrix `FILE` (.npy or .mtx), instead of the first argument")
	fs.StringVar(&f.b, "b", "", "the right matrix `FILE` (.npy or .mtx), instead of the second argument")
	fs.BoolVar(&f.allowOverflow, "allow-overflow", false, "let float64 input beyond float32's range (±3.4e38) become ±Inf (C is then Inf or NaN there); without it such a value is an error")
	fs.StringVar(&f.out, "o", "", "write C = A·B to `FILE` (.npy or .mtx), atomically; never over an input")
	fs.StringVar(&f.kernel, "kernel", "fast", "compute shader: fast, tiled32, fast:BMxBNxBK_TMxTN or cpu:LXxLY_TMxTN")
	mode := fs.String("validate", "auto", "check C on the CPU: auto|full|freivalds|none (inputs with NaN or Inf: full)")
	format := fs.String("format", "text", "report: text (on stderr) or json (on stdout)")
	fs.StringVar(&f.progress, "progress", "auto", "a progress bar of the panels of C written, on stderr: auto|on|off (auto: when stderr is a terminal)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if err := f.dev.check(); err != nil {
		return nil, err
	}
	switch {
	case len(files) > 0 && (f.a != "" || f.b != ""):
		return nil, usagef("mul: give A and B either as two arguments or with -a and -b, not both (glmul mul A.npy B.npy -o C.npy)")
	case len(files) == 2:
		f.a, f.b = files[0], files[1]
	case len(files) != 0:
		return nil, usagef("mul: give A and B as two arguments, not %d (%q): glmul mul A.npy B.npy -o C.npy", len(files), files)
	}
	switch {
	case f.a == "" || f.b == "":
		return nil, usagef("mul: give the matrices A and B: glmul mul A.npy B.npy -o C.npy (or -a A.npy -b B.npy)")
	case f.out == "":
		return nil, usagef("mul: give -o FILE for C: glmul mul A.npy B.npy -o C.npy")
	}
	for _, p := range []string{f.a, f.b, f.out} {
		if _, err := matfile.Format(p); err != nil {
			return nil, usagef("mul: %v", err)
		}
	}
	if err := glcompute.CheckKernel(f.kernel); err != nil {
		return nil, usagef("mul: -kernel: %v", err)
	}
	if f.mode, err = validate.ParseMode(*mode); err != nil {
		return nil, usagef("mul: -validate: %v", err)
	}
	if f.format, err = report.CheckFormat(*format, report.Text, report.JSON); err != nil {
		return nil, usagef("mul: -format: %v", err)
	}
	if err := checkProgress("mul: ", f.progress); err != nil {
		return nil, err
	}
	return f, nil
}

func runMul(args []string, stdout, stderr io.Writer) error {
	f, err := parseMul(args, stderr)
	if err != nil {
		return err
	}
	for _, in := range []string{f.a, f.b} {
		if sameFile(in, f.out) {
			return usagef("mul: -o %s is an input; write C elsewhere", f.out)
		}
	}
	if err := checkWritable("mul: -o", f.out, false); err != nil {
		return err
	}
	a, b, err := openInputs(f)
	if err != nil {
		return err
	}
	defer a.Close()
	defer b.Close()
	m, k, n := a.Rows(), a.Cols(), b.Cols()
	if need := stream.HostBytes(m, k, n, 0); float64(need) > hostMemoryOr(math.Inf(1)) {
		return fmt.Errorf("mul: the %d×%d by %d×%d product needs %.1f GiB of host memory for B and its panels of A and C; this machine has %.1f GiB",
			m, k, k, n, float64(need)/(1<<30), hostMemoryOr(0)/(1<<30))
	}
	if err := checkRoom(f.out, m, n); err != nil {
		return err
	}
	dev, err := f.dev.openFor([]string{f.kernel}, [3]int{m, k, n})
	if err != nil {
		return err
	}
	abandoned := false
	defer releaseUnlessAbandoned(dev, &abandoned)
	noteKernelChoice(dev, stderr)
	r, abandoned, err := streamProduct(f, dev, a, b, stderr)
	if err != nil {
		return err
	}
	noteReads(f, a, b, stderr)
	return writeMulReport(f, dev, r, stdout, stderr)
}

// checkRoom refuses an m×n C that cannot fit the free space where out
// would be written: .npy's 4 bytes an element, or .mtx's 6 at the least
// ("i j v" and a newline). A device or FIFO is not checked.
func checkRoom(out string, m, n int) error {
	per := 4.0
	if format, _ := matfile.Format(out); format == ".mtx" {
		per = 6
	}
	need := per * float64(m) * float64(n)
	if room, ok := outfile.Room(out); ok && need > float64(room) {
		return fmt.Errorf("mul: C is %d×%d, at least %.1f GiB as %s; the file system of %s has %.1f GiB free", m, n, need/(1<<30), filepath.Ext(out), out, float64(room)/(1<<30))
	}
	return nil
}

// openInputs opens A and B for reading by panels and checks that they
// can be multiplied.
func openInputs(f *mulFlags) (a, b matfile.Source, err error) {
	if a, err = openInput(f.a, f.allowOverflow); err != nil {
		return nil, nil, err
	}
	if b, err = openInput(f.b, f.allowOverflow); err != nil {
		a.Close()
		return nil, nil, err
	}
	if a.Cols() != b.Rows() {
		err = fmt.Errorf("mul: A (%s) is %d×%d and B (%s) is %d×%d: A's columns must equal B's rows", f.a, a.Rows(), a.Cols(), f.b, b.Rows(), b.Cols())
		a.Close()
		b.Close()
		return nil, nil, err
	}
	return a, b, nil
}

// openInput opens an input matrix for reading by panels.
func openInput(path string, allowOverflow bool) (matfile.Source, error) {
	s, err := matfile.Open(path, &matfile.ReadOptions{AllowOverflow: allowOverflow})
	return s, overflowHint(err)
}

// overflowHint adds to a float64 overflow error what to do about it.
func overflowHint(err error) error {
	if errors.Is(err, matfile.ErrOverflow) {
		return fmt.Errorf("%w; rescale the data, or pass -allow-overflow to multiply with ±Inf there", err)
	}
	return err
}

// errNotValidated discards C when its check failed (outfile replaces
// nothing when the write returns an error).
var errNotValidated = errors.New("C failed validation")

// streamProduct multiplies A by B into f.out, panel by panel (package
// stream), through outfile: a regular file is replaced only once every
// row is written and C validated. Ctrl-C stops it between panels, within
// a second (awaitWork), leaving the output as it was.
func streamProduct(f *mulFlags, dev *glcompute.Device, a, b matfile.Source, stderr io.Writer) (r stream.Result, abandoned bool, err error) {
	ctx, stop := notifyInterrupt()
	defer stop()
	o := stream.Options{Kernel: f.kernel, Validate: f.mode, Seed: 1, Context: ctx}
	if bar := newBar(f.progress, stderr, "panels of C written"); bar != nil {
		panels, _ := stream.Panels(a.Rows(), a.Cols(), b.Cols(), 0)
		bar.ChangeMax(panels)
		defer bar.Finish()
		o.Progress = func(done, _ int) { bar.Set(done) }
	}
	err, abandoned = awaitWork(ctx, stderr, "glmul mul", func() error {
		return outfile.WriteWith(f.out, nil, func(w io.Writer) error {
			sink, err := matfile.NewSink(w, f.out, a.Rows(), b.Cols())
			if err != nil {
				return err
			}
			if r, err = stream.Product(dev, a, b, sink, o); err != nil {
				return err
			}
			if r.Validation.Err() != nil {
				return errNotValidated
			}
			return sink.Close()
		})
	})
	if abandoned { // the work goroutine may still write r, and C's temporary file
		outfile.Abandon()
		return stream.Result{}, true, interruptedError{fmt.Sprintf("the %d×%d×%d product did not stop within a second; %s",
			a.Rows(), a.Cols(), b.Cols(), leftAs(f.out))}
	}
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return r, false, interruptedError{fmt.Sprintf("the %d×%d×%d product stopped before its last panel; %s", a.Rows(), a.Cols(), b.Cols(), leftAs(f.out))}
	case errors.Is(err, errNotValidated):
		fmt.Fprintf(stderr, "glmul mul: %v; %s\n", r.Validation.Err(), leftAs(f.out))
		return r, false, errReported
	}
	return r, abandoned, overflowHint(err)
}

// leftAs says what became of out when the product did not finish: a
// regular file is replaced only at the end (outfile), but a device or FIFO
// was written as C came.
func leftAs(out string) string {
	if fi, err := os.Stat(out); err == nil && fi.Mode()&(os.ModeDevice|os.ModeNamedPipe) != 0 {
		return out + " (a device or FIFO) received the rows of C computed until then, unvalidated"
	}
	return out + " was left as it was"
}

// noteReads tells stderr what float32 and the files' formats changed in
// A and B.
func noteReads(f *mulFlags, a, b matfile.Source, stderr io.Writer) {
	for _, in := range []struct {
		path string
		info matfile.ReadInfo
	}{{f.a, a.Info()}, {f.b, b.Info()}} {
		if in.info.Overflows > 0 {
			fmt.Fprintf(stderr, "glmul mul: %s: %s beyond float32's range became ±Inf (-allow-overflow)\n", in.path, countOf(in.info.Overflows, "float64 value", "float64 values"))
		}
		if in.info.Underflows > 0 {
			fmt.Fprintf(stderr, "glmul mul: %s: %s too small for float32 (below ≈1.4e-45) became 0\n", in.path, countOf(in.info.Underflows, "nonzero value", "nonzero values"))
		}
		if in.info.Duplicates > 0 {
			fmt.Fprintf(stderr, "glmul mul: %s: %s summed into an earlier entry at the same position (MatrixMarket's coordinate convention)\n", in.path, countOf(in.info.Duplicates, "duplicate entry", "duplicate entries"))
		}
	}
}

// writeMulReport prints the product's report (JSON on stdout with
// -format json, else text on stderr) and says where C went.
func writeMulReport(f *mulFlags, dev *glcompute.Device, r stream.Result, stdout, stderr io.Writer) error {
	rep := &report.Mul{Device: measure.Device(dev.Info()), Inputs: []string{f.a, f.b}, Output: f.out, Kernel: r.Kernel,
		M: r.M, K: r.K, N: r.N, Panels: r.Panels, PanelRows: r.PanelRows, HostBytes: r.HostBytes,
		ReadB: r.ReadB, Read: r.Read, GPU: r.GPU, Check: r.Check, WriteC: r.Write, Wall: r.Wall,
		GFLOPS: measure.GFLOPS(r.Flop(), r.Wall), Validation: r.Validation}
	w := stderr
	if f.format == report.JSON {
		w = stdout
	}
	if err := rep.Write(w, f.format); err != nil {
		return err
	}
	if f.format != report.JSON {
		fmt.Fprintf(stderr, "wrote C (%d×%d float32) to %s\n", r.M, r.N, f.out)
	}
	return nil
}

// parseInterspersed parses args into fs with positional arguments among
// the flags (glmul mul A.npy B.npy -o C.npy): the flag package stops at
// the first non-flag, so the rest is parsed again after it. It returns
// the positional arguments, in order; all of them after "--".
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseQuietly(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if parsed := len(args) - len(rest); parsed > 0 && args[parsed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// countOf writes n with the noun's singular or plural: "1 duplicate entry".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// sameFile reports whether paths x and y name one file (an existing one,
// or the same path).
func sameFile(x, y string) bool {
	fx, ex := os.Stat(x)
	fy, ey := os.Stat(y)
	if ex == nil && ey == nil {
		return os.SameFile(fx, fy)
	}
	ax, errx := filepath.Abs(x)
	ay, erry := filepath.Abs(y)
	return errors.Join(errx, erry) == nil && ax == ay
}
