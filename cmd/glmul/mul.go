package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
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
}

func parseMul(args []string, stderr io.Writer) (*mulFlags, error) {
	fs := newCommand("glmul mul", `glmul mul multiplies two matrices from files, C = A·B, on the GPU, validates
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
C is float32 ('<f4' .npy, or "array real general" .mtx). The report goes to
stderr (to stdout with -format json).`, []string{"A.npy B.npy -o C.npy [flags]", "-a A.npy -b B.npy -o C.npy [flags]"}, stderr)
	f := &mulFlags{}
	f.dev.register(fs)
	fs.StringVar(&f.a, "a", "", "the left matrix `FILE` (.npy or .mtx), instead of the first argument")
	fs.StringVar(&f.b, "b", "", "the right matrix `FILE` (.npy or .mtx), instead of the second argument")
	fs.BoolVar(&f.allowOverflow, "allow-overflow", false, "let float64 input beyond float32's range (±3.4e38) become ±Inf (C is then Inf or NaN there); without it such a value is an error")
	fs.StringVar(&f.out, "o", "", "write C = A·B to `FILE` (.npy or .mtx), atomically; never over an input")
	fs.StringVar(&f.kernel, "kernel", "fast", "compute shader: fast, tiled32, fast:BMxBNxBK_TMxTN or cpu:LXxLY_TMxTN")
	mode := fs.String("validate", "auto", "check C on the CPU: auto|full|freivalds|none (inputs with NaN or Inf: full)")
	format := fs.String("format", "text", "report: text (on stderr) or json (on stdout)")
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
	a, err := readInput(f.a, f.allowOverflow, stderr)
	if err != nil {
		return err
	}
	b, err := readInput(f.b, f.allowOverflow, stderr)
	if err != nil {
		return err
	}
	if a.Cols != b.Rows {
		return fmt.Errorf("mul: A (%s) is %d×%d and B (%s) is %d×%d: A's columns must equal B's rows", f.a, a.Rows, a.Cols, f.b, b.Rows, b.Cols)
	}
	if err := checkHostMemory(a.Rows, a.Cols, b.Cols); err != nil {
		return err
	}
	dev, err := f.dev.openFor([]string{f.kernel}, [3]int{a.Rows, a.Cols, b.Cols})
	if err != nil {
		return err
	}
	defer dev.Release()
	noteKernelChoice(dev, stderr)
	mode := f.mode
	if mode != validate.None && !(finite(a) && finite(b)) {
		mode = validate.Full // Freivalds' sums cannot tell where a NaN belongs
	}
	in := &measure.Inputs{A: a, B: b, C: cpu.New(a.Rows, b.Cols), Seed: 1}
	r, err := measure.Product(dev, in, measure.Options{Kernel: f.kernel, Validate: mode, Once: true})
	if err != nil {
		return err
	}
	rep := r.Report(dev.Info(), dev.Staging(), 1, 0, glcompute.DefaultMaxGroups)
	rep.Inputs = []string{f.a, f.b} // the data are the files: no seed to name
	w := stderr
	if f.format == report.JSON {
		w = stdout
	}
	if err := rep.Write(w, f.format); err != nil {
		return err
	}
	if err := r.Validation.Err(); err != nil {
		fmt.Fprintf(stderr, "glmul mul: %v; %s not written\n", err, f.out)
		return errReported
	}
	if err := matfile.Write(f.out, in.C); err != nil {
		return err
	}
	if f.format != report.JSON {
		fmt.Fprintf(stderr, "wrote C (%d×%d float32) to %s\n", in.C.Rows, in.C.Cols, f.out)
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

// readInput reads an input matrix and tells stderr what float32 and the
// file's format changed in it.
func readInput(path string, allowOverflow bool, stderr io.Writer) (blas32.General, error) {
	m, info, err := matfile.ReadWith(path, &matfile.ReadOptions{AllowOverflow: allowOverflow})
	if errors.Is(err, matfile.ErrOverflow) {
		return m, fmt.Errorf("%w; rescale the data, or pass -allow-overflow to multiply with ±Inf there", err)
	}
	if err != nil {
		return m, err
	}
	if info.Overflows > 0 {
		fmt.Fprintf(stderr, "glmul mul: %s: %s beyond float32's range became ±Inf (-allow-overflow)\n", path, countOf(info.Overflows, "float64 value", "float64 values"))
	}
	if info.Underflows > 0 {
		fmt.Fprintf(stderr, "glmul mul: %s: %s too small for float32 (below ≈1.4e-45) became 0\n", path, countOf(info.Underflows, "nonzero value", "nonzero values"))
	}
	if info.Duplicates > 0 {
		fmt.Fprintf(stderr, "glmul mul: %s: %s summed into an earlier entry at the same position (MatrixMarket's coordinate convention)\n", path, countOf(info.Duplicates, "duplicate entry", "duplicate entries"))
	}
	return m, nil
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

// finite reports whether every element of m is finite.
func finite(m blas32.General) bool {
	for i := 0; i < m.Rows; i++ {
		for _, v := range m.Data[i*m.Stride : i*m.Stride+m.Cols] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return false
			}
		}
	}
	return true
}
