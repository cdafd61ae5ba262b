package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/glmul/glmul/validate"
)

// Mul is the report of glmul mul: a product streamed from files to a
// file in panels of rows, its stages overlapping (stream.Mul).
type Mul struct {
	Device Device `json:"device"`
	// Type is the element type, "float32" or "float64" (glmul mul -type
	// f64); both stream in panels of rows, their stages overlapping.
	Type   string   `json:"type"`
	Inputs []string `json:"inputs"` // A's and B's files
	Output string   `json:"output"`
	// InputsQuoted and OutputQuoted are the paths as Go string literals
	// (QuotePath), set by Write where a path is not UTF-8, which
	// Inputs and Output then cannot hold faithfully in JSON.
	InputsQuoted []string `json:"inputs_quoted,omitempty"`
	OutputQuoted string   `json:"output_quoted,omitempty"`
	Kernel       string   `json:"kernel"` // of a whole panel
	M            int      `json:"m"`
	K            int      `json:"k"`
	N            int      `json:"n"`
	// Panels of PanelRows rows; HostBytes of host memory for them and B.
	Panels    int   `json:"panels"`
	PanelRows int   `json:"panel_rows"`
	HostBytes int64 `json:"host_bytes"`
	// Each stage's busy time (WriteC: writing C), and the whole
	// product's wall time, from reading B to C's last row written (context
	// creation excluded).
	ReadB  time.Duration `json:"read_b_ns"`
	Read   time.Duration `json:"read_a_ns"`
	GPU    time.Duration `json:"gpu_ns"`
	Check  time.Duration `json:"check_ns"`
	WriteC time.Duration `json:"write_ns"`
	Wall   time.Duration `json:"wall_ns"`
	// GFLOPS is 2·M·N·K over Wall: files to file.
	GFLOPS     float64         `json:"gflops_files_to_file"`
	Validation validate.Result `json:"validation"`
	// Empty: M, K or N is 0, and C (zeros, or no elements) was written
	// without a device (Device is then null), nothing to validate.
	Empty bool `json:"empty,omitempty"`
	// Devices has a row a device of a group (glmul mul -devices; Device
	// is then the first's), none for one device.
	Devices []MulDevice `json:"devices,omitempty"`
}

// MulDevice is one device's part of a streamed product over a group.
type MulDevice struct {
	Index    int           `json:"index"` // its EGL device index, as -devices names it
	Renderer string        `json:"renderer"`
	Kernel   string        `json:"kernel"`
	Panels   int           `json:"panels"`
	Reruns   int           `json:"reruns"` // panels of a device that failed
	Busy     time.Duration `json:"busy_ns"`
	Error    string        `json:"error,omitempty"`
}

// Write formats r to w as text or JSON.
func (r *Mul) Write(w io.Writer, f Format) error {
	if f == JSON {
		return r.writeJSON(w)
	}
	ew := &errWriter{w: w}
	p := func(label, format string, args ...any) {
		fmt.Fprintf(ew, "%-10s %s\n", label, fmt.Sprintf(format, args...))
	}
	typ := r.Type
	if typ == "" {
		typ = "float32"
	}
	p("product", "C = A·B in %s, A %d×%d from %s, B %d×%d from %s", typ, r.M, r.K, r.Inputs[0], r.K, r.N, r.Inputs[1])
	if r.Empty {
		what := fmt.Sprintf("C is %d×%d zeros (each element a sum of no terms, K = 0)", r.M, r.N)
		if r.M == 0 || r.N == 0 {
			what = fmt.Sprintf("C is %d×%d, without elements", r.M, r.N)
		}
		p("empty", "%s, as NumPy gives it: no GPU used, nothing to validate", what)
		p("read", "%8.2f ms  B, then %8.2f ms  A", ms(r.ReadB), ms(r.Read))
		p("write", "%8.2f ms  C to %s", ms(r.WriteC), r.Output)
		return ew.err
	}
	i := r.Device
	if len(r.Devices) == 0 {
		p("device", "%s | %s | %s | %s", i.Vendor, i.Renderer, i.Version, i.GLSLVersion)
	}
	p("backend", "%s", i.Backend)
	r.writeDevices(p)
	dest := "the file"
	if r.Output == "standard output" {
		dest = r.Output
	}
	// float64 panels go through Device.Mul64, which uploads B for each,
	// and are checked against a double-double reference.
	bUp, ref := "", ""
	if typ == "float64" {
		bUp, ref = ", B uploaded for each", " (double-double reference)"
	}
	if len(r.Devices) == 0 {
		p("kernel", "%s (for a whole panel)", r.Kernel)
	}
	p("panels", "%d of %d rows of A and C, streamed from the files to %s%s; %s of host memory for them and B",
		r.Panels, r.PanelRows, dest, bUp, mib(r.HostBytes))
	p("", "stage times below: each stage's busy time, the stages overlapping")
	p("read", "%8.2f ms  B whole, then %8.2f ms  A by panels", ms(r.ReadB), ms(r.Read))
	p("gpu", "%8.2f ms  uploads, products and readbacks of the panels", ms(r.GPU))
	p("check", "%8.2f ms  validation on the CPU, panel by panel%s", ms(r.Check), ref)
	p("write", "%8.2f ms  C to %s", ms(r.WriteC), r.Output)
	p("files", "%8.2f ms  from the first read to the last row written; %s GFLOPS files to %s", ms(r.Wall), FormatGFLOPS(r.GFLOPS), dest)
	p("validate", "%s", r.Validation)
	return ew.err
}

// writeDevices prints a group's rows (none for one device) through p.
func (r *Mul) writeDevices(p func(label, format string, args ...any)) {
	if len(r.Devices) == 0 {
		return
	}
	p("group", "%s; each panel went to the device free first", Plural(len(r.Devices), "device"))
	for _, d := range r.Devices {
		p(fmt.Sprintf("device %d", d.Index), "%s: %s, %s, %8.2f ms busy; kernel %s", d.Renderer, Plural(d.Panels, "panel"), Plural(d.Reruns, "rerun"), ms(d.Busy), d.Kernel)
		if d.Error != "" {
			p("", "failed: %s; the other devices computed the panels it had not", d.Error)
		}
	}
}

// writeJSON writes r as JSON, with the paths that are not UTF-8 also
// quoted (OutputQuoted, InputsQuoted).
func (r *Mul) writeJSON(w io.Writer) error {
	v := *r
	v.OutputQuoted = QuotePath(r.Output)
	for _, p := range r.Inputs {
		if QuotePath(p) != "" {
			v.InputsQuoted = make([]string, len(r.Inputs))
			for i, p := range r.Inputs {
				v.InputsQuoted[i] = strconv.Quote(p)
			}
			break
		}
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(&v)
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// QuotePath returns path as a Go string literal (strconv.Quote: a byte
// that is not UTF-8 becomes \xNN; strconv.Unquote gives the bytes back)
// where path is not valid UTF-8, and "" where it is. JSON strings are
// Unicode: encoding/json writes such a byte as U+FFFD, losing it, so a
// report that names a path adds this beside it.
func QuotePath(path string) string {
	if utf8.ValidString(path) {
		return ""
	}
	return strconv.Quote(path)
}
