package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/matfile"
	"github.com/glmul/glmul/internal/measure"
	"github.com/glmul/glmul/internal/report"
	"github.com/glmul/glmul/validate"
)

// mulFlags are glmul mul's flags, checked.
type mulFlags struct {
	dev       deviceFlags
	a, b, out string
	kernel    string
	mode      validate.Mode
	format    report.Format
}

func parseMul(args []string, stderr io.Writer) (*mulFlags, error) {
	fs := newCommand("glmul mul", `glmul mul multiplies two matrices from files, C = A·B, on the GPU, validates
the product on the CPU and writes C. Files are NumPy .npy (float32 or float64,
either byte order, C or Fortran order) or MatrixMarket .mtx (array or
coordinate; real, integer or pattern; general or symmetric); the output's
extension chooses its format. glmul computes in float32: float64 input is
rounded, and C is float32 ('<f4' .npy, or "array real general" .mtx).
The report goes to stderr (to stdout with -format json).`, []string{"-a A.npy -b B.npy -o C.npy [flags]"}, stderr)
	f := &mulFlags{}
	f.dev.register(fs)
	fs.StringVar(&f.a, "a", "", "the left matrix `FILE` (.npy or .mtx)")
	fs.StringVar(&f.b, "b", "", "the right matrix `FILE` (.npy or .mtx)")
	fs.StringVar(&f.out, "o", "", "write C = A·B to `FILE` (.npy or .mtx), atomically; never over an input")
	fs.StringVar(&f.kernel, "kernel", "fast", "compute shader: fast, tiled32, fast:BMxBNxBK_TMxTN or cpu:LXxLY_TMxTN")
	mode := fs.String("validate", "auto", "check C on the CPU: auto|full|freivalds|none (inputs with NaN or Inf: full)")
	format := fs.String("format", "text", "report: text (on stderr) or json (on stdout)")
	if err := f.dev.parse(fs, args); err != nil {
		return nil, err
	}
	var err error
	switch {
	case f.a == "" || f.b == "" || f.out == "":
		return nil, usagef("mul: give -a, -b and -o (glmul mul -a A.npy -b B.npy -o C.npy)")
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
	a, err := matfile.Read(f.a)
	if err != nil {
		return err
	}
	b, err := matfile.Read(f.b)
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
