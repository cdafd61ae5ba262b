package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/glmul/glmul/cmd/glmul/internal/measure"
	"github.com/glmul/glmul/cmd/glmul/internal/report"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
)

// What glmul tune keeps of its sweeps: the outcome it prints, the tuning
// cache it saves the winners to, and -show, which prints that cache.

// finish prints the classes done, then returns the error that saving
// them met, if any, and, where Ctrl-C interrupted the tuning, an
// interruptedError that says what was kept (a save error then goes to
// stderr first).
func (f *tuneFlags) finish(stdout, stderr io.Writer, d *glcompute.Device, results, done []classResult, path string, st *tuneState, interrupted bool, started time.Time) error {
	// The results are printed even when saving failed: minutes of
	// measuring are not thrown away.
	if len(done) > 0 {
		if err := f.write(stdout, d.Info(), done, path, st.saved, time.Since(started)); err != nil {
			return err
		}
	}
	if st.saveErr != nil {
		err := fmt.Errorf("tune: the results above could not be saved to %s: %w", path, st.saveErr)
		if !interrupted {
			return err
		}
		fmt.Fprintf(stderr, "glmul: %v\n", err)
	}
	if interrupted {
		return interruptedError{f.kept(results, done, path, st.saveErr == nil)}
	}
	return nil
}

// kept says what an interrupted tune kept, for its last line: done are
// the classes printed (the last one interrupted, if it measured anything)
// of results, the classes it was to tune.
func (f *tuneFlags) kept(results, done []classResult, path string, savedOK bool) string {
	var names []string
	var cut *classResult
	for i := range done {
		if done[i].Interrupted {
			cut = &done[i]
		} else {
			names = append(names, string(done[i].Class))
		}
	}
	var s string
	switch {
	case len(names) == 0:
		s = "no shape class finished"
	case !f.save:
		s = fmt.Sprintf("%s finished (not saved: -save=false)", strings.Join(names, ", "))
	case !savedOK:
		s = fmt.Sprintf("%s finished (saving failed)", strings.Join(names, ", "))
	default:
		s = fmt.Sprintf("%s finished (saved to %s)", strings.Join(names, ", "), path)
	}
	switch {
	case cut != nil:
		s += fmt.Sprintf("; %s was interrupted: the candidates it measured so far (%d) are printed, not saved", cut.Class, len(cut.Candidates))
	case len(done) < len(results):
		s += fmt.Sprintf("; %s was interrupted before its first candidate", results[len(done)].Class)
	}
	return s
}

// write prints the sweeps' outcome: a line per class with its winner, and
// every candidate's rate by class.
func (f *tuneFlags) write(w io.Writer, info glcompute.Info, results []classResult, path string, saved []string, took time.Duration) error {
	builtin := tuning.Choose(measure.Driver(info), measure.Facts(info)).Default
	if f.typ == typeF64 {
		builtin = info.Float64Kernel // the device is opened with IgnoreTuned
	}
	savedTo := ""
	if len(saved) > 0 {
		savedTo = path
	}
	tuned := len(results)
	if tuned > 0 && results[tuned-1].Interrupted {
		tuned--
	}
	t := report.Table{Header: []string{"class", "rank", "kernel", "GFLOPS", "vs best", "valid"},
		JSON: map[string]any{"device": info, "n": f.n, "reps": f.reps, "builtin_default": builtin, "classes": results,
			"saved_to": savedTo, "seconds": took.Seconds(), "type": typeName(f.typ)},
		Preamble: [][2]string{
			{"device", fmt.Sprintf("%s | %s | %s", info.Vendor, info.Renderer, measure.API(info))},
			{"type", f.typeLine()},
			{"tuned", fmt.Sprintf("%s, %s and the built-in choice each, in %s; a rate is the geometric mean over the class's products of medians of %s, every product validated",
				report.Plural(tuned, "shape class"), report.Plural(len(f.specs), "candidate"), seconds(took), report.Plural(f.reps, "run"))}}}
	skipped := 0
	for _, r := range results {
		t.Preamble = append(t.Preamble, f.classLine(&r))
		for i, c := range r.Candidates {
			if c.Error != "" && c.GFLOPS == 0 {
				skipped++
				continue
			}
			mark := ""
			switch {
			case c.Kernel == r.builtin() && r.f64:
				mark = " (built-in choice: Mul64's without tuning)"
			case c.Kernel == r.builtin():
				mark = " (built-in choice, shape by shape)"
			}
			vsBest := "-"
			if r.Best.GFLOPS > 0 { // an interrupted class may have measured only invalid ones
				vsBest = fmt.Sprintf("%.0f%%", 100*c.GFLOPS/r.Best.GFLOPS)
			}
			t.Rows = append(t.Rows, []string{string(r.Class), fmt.Sprint(i + 1), c.Kernel + mark, report.FormatGFLOPS(c.GFLOPS),
				vsBest, fmt.Sprint(c.Valid)})
		}
	}
	if len(saved) > 0 {
		t.Preamble = append(t.Preamble, [2]string{"saved", fmt.Sprintf("%s to %s; glmul now uses them on this driver", strings.Join(saved, ", "), path)})
	}
	if skipped > 0 {
		t.Notes = []string{fmt.Sprintf("skipped  %d candidate runs that do not fit this device or failed to compile (-format json lists why)", skipped)}
	}
	return t.Write(w, f.format)
}

// classLine is the preamble line of class r: its winner and the verdict,
// or, where Ctrl-C stopped it, the fastest so far.
func (f *tuneFlags) classLine(r *classResult) [2]string {
	tiled32 := "tiled32: " + report.FormatGFLOPS(r.Tiled32.GFLOPS)
	if r.f64 {
		tiled32 = "" // no float64 version
	}
	if r.Interrupted {
		if tiled32 != "" {
			tiled32 = " (" + tiled32 + ")"
		}
		return [2]string{"stopped", fmt.Sprintf("%s (%s): Ctrl-C after %d of its %d first-pass candidates; fastest so far %s: %s GFLOPS%s; not saved",
			r.Class, strings.Join(r.Shapes, ", "), len(r.Candidates), r.runs(f.specs)-r.baselines(), r.Best.Kernel, report.FormatGFLOPS(r.Best.GFLOPS), tiled32)}
	}
	if tiled32 != "" {
		tiled32 = "; " + tiled32
	}
	verdict := "tuned"
	switch {
	case !r.Saved:
		verdict = fmt.Sprintf("the built-in choice kept: the best is not %.0f%% faster", 100*(tuning.TunedMargin-1))
	}
	return [2]string{"best", fmt.Sprintf("%s (%s): %s: %s GFLOPS (built-in choice: %s%s); %s", r.Class, strings.Join(r.Shapes, ", "), r.Best.Kernel,
		report.FormatGFLOPS(r.Best.GFLOPS), report.FormatGFLOPS(r.Builtin.GFLOPS), tiled32, verdict)}
}

// saveTuned stores r's winner in the cache at path for the driver of info
// where it beat the built-in choice (r.Saved), and otherwise removes the
// class's entry: glmul then keeps its built-in choice for the class.
func saveTuned(path string, info glcompute.Info, r *classResult) error {
	cache, err := tuning.Load(path)
	if err != nil {
		return err
	}
	drv := measure.Driver(info)
	switch {
	case r.Saved:
		cache.Put(tuning.Entry{Driver: drv, Class: r.Class, Kernel: r.Best.Kernel, GFLOPS: r.Best.GFLOPS, N: r.n, When: time.Now().UTC(), Float64: r.f64})
	case r.f64:
		cache.Delete64(drv, r.Class)
	default:
		cache.Delete(drv, r.Class)
	}
	return cache.Save(path)
}

// showTuning prints the cache and what this device uses now, in format:
// text lines, or a JSON object (showJSON).
func showTuning(dev *deviceFlags, path string, stdout io.Writer, format report.Format) error {
	cache, err := tuning.Load(path)
	if err != nil {
		return err
	}
	for i := range cache.Entries {
		if cache.Entries[i].Class == "" { // written before classes
			cache.Entries[i].Class = tuning.Square
		}
	}
	if format == report.JSON {
		d, err := dev.open()
		if err != nil {
			return err
		}
		defer d.Release()
		return (&report.Table{JSON: newShowJSON(path, cache, d.Info())}).Write(stdout, report.JSON)
	}
	// Printed whole once the device is open, so that a write error
	// (a full disk, a closed pipe) is returned, as every command's is.
	var out bytes.Buffer
	fmt.Fprintf(&out, "cache    %s (%d entries)\n", path, len(cache.Entries))
	for _, e := range cache.Entries {
		class := string(e.Class)
		if e.Float64 {
			class = "float64 " + class
		}
		fmt.Fprintf(&out, "  %s | %s | %s, %s: %s, %.1f GFLOPS at n=%d, %s\n", e.Vendor, e.Renderer, e.Version, class, e.Kernel, e.GFLOPS, e.N, e.When.Format("2006-01-02"))
	}
	d, err := dev.open()
	if err != nil {
		return err
	}
	defer d.Release()
	i := d.Info()
	fmt.Fprintf(&out, "device   %s | %s | %s\n", i.Vendor, i.Renderer, measure.API(i))
	fmt.Fprintf(&out, "uses     %s: %s\n", i.DefaultKernel, i.DefaultKernelSource)
	for _, c := range tuning.Classes {
		if k, ok := i.ClassKernels[string(c)]; ok {
			fmt.Fprintf(&out, "uses     %s for %s products (tuned by glmul tune)\n", k, c)
		}
	}
	if i.Float64Kernel != "" {
		fmt.Fprintf(&out, "float64  %s: %s\n", i.Float64Kernel, i.Float64KernelSource)
		for _, c := range tuning.Classes {
			if k, ok := i.Float64ClassKernels[string(c)]; ok {
				fmt.Fprintf(&out, "float64  %s for %s products (tuned by glmul tune -type f64)\n", k, c)
			}
		}
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

// showJSON is glmul tune -show -format json: the cache, the device, and
// the kernel each shape class uses on it.
type showJSON struct {
	Cache   string         `json:"cache"`
	Entries []tuning.Entry `json:"entries"` // every driver's, as the file holds them
	Device  glcompute.Info `json:"device"`
	Classes []showClass    `json:"classes"`
}

// showClass is the kernel a shape class's products run on the device.
type showClass struct {
	Class  tuning.Class `json:"class"`
	Kernel string       `json:"kernel"`
	// Source says where the choice came from: glmul tune, or, for square
	// products and a class it did not tune, the default kernel's source
	// (glcompute.Info.DefaultKernelSource). An untuned class runs the
	// default shape by shape: its small-grid or natural-A variant where a
	// product fits it badly (Info.SmallGridKernel, Info.NaturalKernel,
	// Info.NaturalWideKernel).
	Source string `json:"source"`
}

func newShowJSON(path string, cache tuning.Cache, i glcompute.Info) showJSON {
	s := showJSON{Cache: path, Entries: cache.Entries, Device: i}
	if s.Entries == nil {
		s.Entries = []tuning.Entry{}
	}
	for _, c := range tuning.Classes {
		k, ok := i.ClassKernels[string(c)]
		switch {
		case ok:
			s.Classes = append(s.Classes, showClass{c, k, "tuned by glmul tune"})
		case c == tuning.Square:
			s.Classes = append(s.Classes, showClass{c, i.DefaultKernel, i.DefaultKernelSource})
		default:
			s.Classes = append(s.Classes, showClass{c, i.DefaultKernel, "not tuned for this class: the default, shape by shape (" + i.DefaultKernelSource + ")"})
		}
	}
	return s
}

// seconds prints d in seconds, to a tenth below 10 s ("in 0 s" said a
// short tuning took no time).
func seconds(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}
