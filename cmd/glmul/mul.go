package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/term"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/stream"
	"github.com/glmul/glmul/glcompute/tuning"
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
	typ           string // -type: f32 or f64
	devices       []int  // -devices: the group's EGL indices (nil: every GPU)
	group         bool   // -devices was given
}

// mulHelp is glmul mul's -h text.
const mulHelp = `glmul mul multiplies two matrices from files, C = A·B, on the GPU, validates
the product on the CPU and writes C. Files are NumPy .npy (float32 or float64:
dtype '<f4', '>f4', '<f8' or '>f8'; C or Fortran order) or MatrixMarket .mtx
(array or coordinate; real, integer or pattern; general or symmetric); the
output's extension chooses its format. A or B may be - (standard input, one
of them) or a FIFO (a shell's <(...)): read once, in order, its format told by
its first bytes where its name has no .npy or .mtx.

By default (-type f32) glmul computes in float32: float64 input is rounded to
float32, and C is float32. A float64 value beyond float32's range (±3.4e38) is
an error unless -allow-overflow; nonzero values too small for float32 (below
1.4e-45) become 0, counted on stderr. NaN and Inf in a file are data, kept.
With -type f64 glmul computes in float64 (the dfast kernel; desktop OpenGL,
not ES): float64 input stays float64, float32 input is widened, C is float64
('<f8' .npy, or .mtx with 17 significant digits), validated against a
double-double reference; it streams too (below).
A coordinate .mtx file that lists a position more than once means the sum of
its entries (MatrixMarket's convention, as SciPy reads it): glmul sums them
and says on stderr how many entries were added to an earlier one.
C is float32 ('<f4' .npy, or "coordinate real general" .mtx listing every
element, row by row) unless -type f64. An empty dimension gives NumPy's C, written without a
GPU: 5×0 by 0×4 is 5×4 zeros, 0×5 by 5×4 a 0×4 matrix.

The product streams: A is read, multiplied and checked, and C written, in
panels of rows (at most 64 MiB of A and C rows a panel; three panels in host
memory and two on the GPU; with -type f64 one panel at a time, of 64 MiB or
B's size where B is larger, B uploaded again for each), so that memory holds
B and the panels, not A and C (a .mtx input is read whole, as is a
Fortran-order .npy from a stream). With -devices, panels go to each GPU
as it becomes free; memory holds B and 2·GPUs+1 panels. C is written to a
temporary file beside -o and renamed over it at the end: the file system
needs C's size free, and an error, a failed validation or Ctrl-C leaves -o
as it was. Products up to 2^20
multiply-adds are validated in full, larger ones by Freivalds' method, panel by
panel. The report goes to stderr (to stdout with -format json), a failed
validation's too, before the failure.`

func parseMul(args []string, help io.Writer) (*mulFlags, error) {
	fs := newCommand("glmul mul", mulHelp, []string{"A.npy B.npy -o C.npy [flags]", "-a A.npy -b B.npy -o C.npy [flags]"}, help)
	f := &mulFlags{}
	f.dev.register(fs)
	fs.StringVar(&f.a, "a", "", "the left matrix `FILE` (.npy or .mtx; - for standard input), instead of the first argument")
	fs.StringVar(&f.b, "b", "", "the right matrix `FILE` (.npy or .mtx; - for standard input), instead of the second argument")
	fs.BoolVar(&f.allowOverflow, "allow-overflow", false, "let float64 input beyond float32's range (±3.4e38) become ±Inf (C is then Inf or NaN there); without it such a value is an error")
	fs.StringVar(&f.out, "o", "", "write C = A·B to `FILE` (.npy or .mtx), atomically; never over an input; - (or /dev/stdout): standard output, as .npy, as C comes")
	fs.StringVar(&f.kernel, "kernel", "fast", "compute shader: fast, tiled32, fast:BMxBNxBK_TMxTN or cpu:LXxLY_TMxTN")
	mode := fs.String("validate", "auto", "check C on the CPU: auto|full|freivalds|none")
	format := fs.String("format", "text", "report: text (on stderr) or json (on stdout)")
	fs.StringVar(&f.progress, "progress", "auto", "a progress bar of the panels of C written, on stderr: auto|on|off (auto: when stderr is a terminal)")
	devices := fs.String("devices", "", "multiply over several GPUs: `LIST` is all (every GPU EGL lists) or EGL device indices such as 1,2; each panel of A's rows goes to the GPU that is free first (default: one device, -device)")
	fs.StringVar(&f.typ, "type", typeF32, "element `type`: f32 (float32: float64 input rounded to float32, C float32) or f64 (float64 from file to file: the dfast kernel, streamed by panels as f32 is; not on OpenGL ES)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if err := f.dev.checkFor(fs.Name()); err != nil {
		return nil, err
	}
	if err := f.checkFiles(files, *format); err != nil {
		return nil, err
	}
	if err := checkType("mul: ", f.typ); err != nil {
		return nil, err
	}
	if f.typ == typeF64 {
		if f.kernel, err = kernel64("mul: -kernel", f.kernel); err != nil {
			return nil, err
		}
	} else if err := tuning.CheckKernel(f.kernel); err != nil {
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
	fs.Visit(func(fl *flag.Flag) { f.group = f.group || fl.Name == "devices" })
	if f.group {
		if f.devices, err = f.checkGroup(*devices); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// checkFiles takes A and B from the arguments files (or -a and -b) and
// checks them and -o: each named once, formats glmul reads and writes,
// and standard output only for C in .npy with the report on stderr.
func (f *mulFlags) checkFiles(files []string, format string) error {
	switch {
	case len(files) > 0 && (f.a != "" || f.b != ""):
		return usagef("mul: give A and B either as two arguments or with -a and -b, not both (glmul mul A.npy B.npy -o C.npy)")
	case len(files) == 2:
		f.a, f.b = files[0], files[1]
	case len(files) != 0:
		return usagef("mul: give A and B as two arguments, not %d (%q): glmul mul A.npy B.npy -o C.npy", len(files), files)
	}
	switch {
	case f.a == "" || f.b == "":
		return usagef("mul: give the matrices A and B: glmul mul A.npy B.npy -o C.npy (or -a A.npy -b B.npy)")
	case f.out == "":
		return usagef("mul: give -o FILE for C: glmul mul A.npy B.npy -o C.npy")
	case f.out == "/dev/stdout" || f.out == "/dev/fd/1" || f.out == "/proc/self/fd/1":
		// Standard output by another name: written as "-" is, in place,
		// whatever it is (a file the shell opened, named C.bin say, took
		// its format from that name, or was replaced by a new file behind
		// the shell's back).
		f.out = outfile.Stdout
	}
	if f.out == outfile.Stdout && format == "json" {
		return usagef("mul: -o - writes C to standard output, where -format json would write the report too: use -format text (the report on stderr) or name a file")
	}
	for _, p := range []string{f.a, f.b} {
		if _, err := matfile.InputFormat(p); err != nil {
			return usagef("mul: %v", err)
		}
	}
	if _, err := matfile.OutputFormat(f.out); err != nil {
		return usagef("mul: -o: %v", err)
	}
	return nil
}

func runMul(args []string, stdout, stderr io.Writer) error {
	f, err := parseMul(args, stdout)
	if err != nil {
		return err
	}
	if err := checkStreams(f); err != nil {
		return err
	}
	for _, in := range []string{f.a, f.b} {
		if in == matfile.Stdin { // not -o -, standard output
			continue
		}
		if sameFile(in, f.out) {
			return usagef("mul: -o %s is an input; write C elsewhere", f.out)
		}
		if f.out == outfile.Stdout && stdoutIs(in) {
			return usagef("mul: -o %s: standard output is the input %s (1<> or >> onto it); write C elsewhere", f.out, in)
		}
	}
	a, b, err := openInputs(f)
	if err != nil {
		return err
	}
	defer a.Close()
	defer b.Close()
	if emptyDims(a.Rows(), a.Cols(), b.Cols()) {
		return emptyProduct(f, a, b, stdout, stderr)
	}
	if f.typ == typeF64 {
		return mul64(f, a, b, stdout, stderr)
	}
	r, err := streamProduct(f, a, b, stdout, stderr)
	invalid := errors.Is(err, errNotValidated)
	if err != nil && !invalid {
		return err
	}
	noteReads(f, a, b, stderr)
	if err := writeMulReport(f, r, !invalid, stdout, stderr); err != nil {
		return err
	}
	if invalid { // reported, as -n and bench report theirs
		fmt.Fprintf(stderr, "glmul mul: %v; %s\n", r.Validation.Err(), leftAs(f.out))
		return errReported
	}
	return nil
}

// checkStreams refuses inputs read as streams (matfile.IsStream) that
// cannot both be read: standard input twice, one FIFO twice, or standard
// input from a terminal, where glmul would wait for a matrix typed in.
func checkStreams(f *mulFlags) error {
	switch {
	case f.a == matfile.Stdin && f.b == matfile.Stdin:
		return usagef("mul: A and B are both standard input (-), which holds one matrix: name a file (or a FIFO) for one of them")
	case f.a != matfile.Stdin && matfile.IsStream(f.a) && sameFile(f.a, f.b):
		return usagef("mul: A and B are both %s, a stream, which is read once: name a file for one of them", f.a)
	case (f.a == matfile.Stdin || f.b == matfile.Stdin) && term.IsTerminal(int(os.Stdin.Fd())):
		return usagef("mul: - reads a matrix from standard input, which is a terminal here: pipe one in (python3 make_a.py | glmul mul - B.npy -o C.npy), or name a file")
	}
	return nil
}

// cBytes is the least an m×n C takes in out's format: .npy's 4 bytes an
// element, or .mtx's 6 ("i j v" and a newline).
func cBytes(out string, m, n int) uint64 {
	per := uint64(4)
	if format, _ := matfile.OutputFormat(out); format == ".mtx" {
		per = 6
	}
	return per * uint64(m) * uint64(n)
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
		err = fmt.Errorf("mul: A (%s) is %d×%d and B (%s) is %d×%d: A's columns must equal B's rows",
			matfile.StreamName(f.a), a.Rows(), a.Cols(), matfile.StreamName(f.b), b.Rows(), b.Cols())
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

// mulResult is a streamed product's figures, its check and its device.
type mulResult struct {
	stream.Result
	Validation validate.Result
	Device     glcompute.Info
	Group      []glcompute.Info // -devices: each device's, in Result.Devices' order
}

// mulAutoFullLimit is the largest product (M·N·K multiply-adds) that
// -validate auto checks in full in glmul mul: a product from files to a
// file is bound by its reading and writing, and a full check costs as much
// as a product on the CPU, where Freivalds' method costs a pass over A and
// C. On llvmpipe's two cores: 4096×64×4096 (64 MiB of C) about a second in
// full, eight times NumPy's whole load, multiply and save, against 0.1 s;
// 4096×4096×1 342 ms in full against about 50 ms. validate.AutoFullLimit,
// for glmul's own random products, is 1024 times larger.
const mulAutoFullLimit = 1 << 20

// mulCheck is glmul mul's check of C, panel by panel (validate.Panels):
// the -validate mode, auto resolved by the product's size.
type mulCheck struct {
	mode   validate.Mode
	panels *validate.Panels // made by prepare, once B is read
}

// newMulCheck resolves -validate auto for an m×k by k×n product: full up
// to mulAutoFullLimit, else Freivalds' method.
func newMulCheck(mode validate.Mode, m, k, n int) *mulCheck {
	if mode == validate.Auto {
		mode = validate.Freivalds
		if float64(m)*float64(k)*float64(n) <= mulAutoFullLimit {
			mode = validate.Full
		}
	}
	return &mulCheck{mode: mode}
}

// newPanels is validate.NewPanels, a variable so that a test can make a
// check fail.
var newPanels = validate.NewPanels

// prepare is the product's stream.Options.Check.
func (c *mulCheck) prepare(b blas32.General) stream.PanelCheck {
	c.panels = newPanels(c.mode, b, rand.New(rand.NewPCG(1, 2)))
	return c.panels.Check
}

// mulJob is one float32 glmul mul: its flags, its inputs, the options
// and check of its streamed product, and its figures (r).
type mulJob struct {
	f      *mulFlags
	a, b   matfile.Source
	o      *stream.Options
	chk    *mulCheck
	r      mulResult
	stderr io.Writer
}

// streamProduct multiplies A by B into f.out, panel by panel
// (stream.Mul), through outfile: a regular file is replaced only
// once every row is written and C validated, and refused at the start
// where its file system has not the room. Ctrl-C stops the product
// between panels, within a second (awaitWork), leaving the output as it
// was.
func streamProduct(f *mulFlags, a, b matfile.Source, stdout, stderr io.Writer) (mulResult, error) {
	ctx, stop := notifyInterrupt()
	defer stop()
	m, k, n := a.Rows(), a.Cols(), b.Cols()
	j := &mulJob{f: f, a: a, b: b, chk: newMulCheck(f.mode, m, k, n), stderr: stderr}
	j.o = &stream.Options{Context: ctx, Check: j.chk.prepare, HostLimit: int64(hostMemoryOr(0)), Kernel: f.kernel}
	if bar := newBar(f.progress, stderr, "panels of C written"); bar != nil {
		defer bar.Finish()
		j.o.Progress = func(done, total int) { bar.ChangeMax(total); bar.Set(done) }
	}
	err, abandoned := awaitWork(ctx, stderr, "glmul mul", func() error { return j.run(stdout) })
	if abandoned { // the work goroutine may still write j.r, and C's temporary file
		outfile.Abandon()
		return mulResult{}, interruptedError{fmt.Sprintf("the %d×%d×%d product did not stop within a second; %s", m, k, n, leftAs(f.out))}
	}
	return j.r, mulError(f, m, k, n, err)
}

// run checks that f.out can take C (outfile.CheckSized: a file that
// cannot be kept fails before the device opens), opens the device, then
// writes C to f.out as it is computed and checked; the device is released
// on this goroutine, after the product, never while an abandoned product
// still runs on it.
func (j *mulJob) run(stdout io.Writer) error {
	size := cBytes(j.f.out, j.a.Rows(), j.b.Cols())
	if err := outfile.CheckSized(j.f.out, size); err != nil {
		return err
	}
	// No shape to check: stream.Mul checks the kernel on its panels' shape
	// (not Mul's plan of the whole product) before it reads anything.
	if j.f.group {
		return j.runGroup(stdout, size)
	}
	h, err := j.f.dev.hold(j.stderr, []string{j.f.kernel})
	if err != nil {
		return err
	}
	defer h.release()
	j.r.Device = h.Info()
	return outfile.WriteSized(j.f.out, stdout, size, func(w io.Writer) error { return j.into([]*glcompute.Device{h.Device}, w) })
}

// into multiplies A by B on devs (stream.MulDevices: on one device,
// stream.Mul) into w, C as f.out's format, and checks it (chk). An error
// or a failed check leaves w incomplete, for outfile to discard.
func (j *mulJob) into(devs []*glcompute.Device, w io.Writer) (err error) {
	sink, err := matfile.NewSink(w, j.f.out, j.a.Rows(), j.b.Cols())
	if err != nil {
		return err
	}
	if j.r.Result, err = stream.MulDevices(devs, sink, j.a, j.b, j.o); err != nil {
		return err
	}
	if j.r.Validation = j.chk.panels.Result(); j.r.Validation.Err() != nil {
		return errNotValidated
	}
	return sink.Close()
}

// mulError explains how streamProduct ended when it did not write C
// (a failed check is runMul's to report, after the report).
func mulError(f *mulFlags, m, k, n int, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return interruptedError{fmt.Sprintf("the %d×%d×%d product stopped before its last panel; %s", m, k, n, leftAs(f.out))}
	case errors.Is(err, errNotValidated):
		return err // reported by runMul
	case errors.Is(err, outfile.ErrNoRoom):
		return fmt.Errorf("mul: C is %d×%d %s as %s: %w", m, n, typeName(f.typ), filepath.Ext(f.out), err)
	case errors.Is(err, stream.ErrHostMemory):
		return fmt.Errorf("mul: %w (this machine's memory)", err)
	case errors.As(err, new(usageError)):
		return err
	}
	// A file that cannot be read on, a GPU that failed: say that -o is
	// untouched (or, a FIFO's, what it received).
	return fmt.Errorf("%w; %s", overflowHint(err), leftAs(f.out))
}

// leftAs says what became of out when the product did not finish: a
// regular file is replaced only at the end (outfile), but a device or FIFO
// was written as C came.
func leftAs(out string) string {
	if out == outfile.Stdout {
		return "standard output received the rows of C computed until then, unvalidated"
	}
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
	}{{matfile.StreamName(f.a), a.Info()}, {matfile.StreamName(f.b), b.Info()}} {
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
// -format json, else text on stderr) and, if written, says where C went.
func writeMulReport(f *mulFlags, r mulResult, written bool, stdout, stderr io.Writer) error {
	rep := &report.Mul{Device: measure.Device(r.Device), Type: typeName(f.typ), Inputs: []string{matfile.StreamName(f.a), matfile.StreamName(f.b)}, Output: outName(f.out), Kernel: r.Kernel,
		M: r.M, K: r.K, N: r.N, Panels: r.Panels, PanelRows: r.PanelRows, HostBytes: r.HostBytes,
		ReadB: r.ReadB, Read: r.Read, GPU: r.GPU, Check: r.Check, WriteC: r.Write, Wall: r.Wall,
		GFLOPS: measure.GFLOPS(r.Flop(), r.Wall), Validation: r.Validation, Devices: r.groupRows()}
	if emptyDims(r.M, r.K, r.N) { // no device opened
		rep.Device, rep.Empty = report.Device{}, true
	}
	w := stderr
	if f.format == report.JSON {
		w = stdout
	}
	if err := rep.Write(w, f.format); err != nil {
		return err
	}
	if written && f.format != report.JSON {
		fmt.Fprintf(stderr, "wrote C (%d×%d %s) to %s\n", r.M, r.N, typeName(f.typ), outName(f.out))
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

// stdoutIs reports whether this process's standard output is the file
// at path: -o - onto an input, through the shell's 1<> or >>, would write
// C over A or B as they are read.
func stdoutIs(path string) bool {
	so, err := os.Stdout.Stat()
	if err != nil {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && os.SameFile(so, fi)
}

// outName is -o as messages name it: "standard output" for "-".
func outName(out string) string {
	if out == outfile.Stdout {
		return "standard output"
	}
	return out
}
