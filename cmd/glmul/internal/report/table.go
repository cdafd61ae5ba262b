package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Table formats. Text and CSV are Run's too.
const Markdown Format = "markdown"

// Table is the output of a command that measures many products (bench,
// tune, table): a few labelled lines about the run, then rows under a
// header. JSON is written whole instead, for a machine to read.
type Table struct {
	Preamble [][2]string // label, value: "device", "NVIDIA | H100 | ..."
	Header   []string
	Rows     [][]string
	Notes    []string // lines after the rows (text and Markdown)
	JSON     any
}

// CheckFormat returns a usage-style error unless f is one of the formats
// allowed.
func CheckFormat(f string, allowed ...Format) (Format, error) {
	for _, a := range allowed {
		if Format(f) == a {
			return a, nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return "", fmt.Errorf("unknown format %q: use %s", f, strings.Join(names, ", "))
}

// Write formats t: Text (labelled lines, then the rows aligned right),
// Markdown, CSV (the header and rows only) or JSON (t.JSON).
func (t *Table) Write(out io.Writer, f Format) error {
	w := &errWriter{w: out}
	if err := t.write(w, f); err != nil {
		return err
	}
	return w.err
}

func (t *Table) write(w io.Writer, f Format) error {
	switch f {
	case JSON:
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(t.JSON)
	case CSV:
		cw := csv.NewWriter(w)
		cw.Write(t.Header)
		cw.WriteAll(t.Rows)
		return cw.Error()
	case Markdown:
		for _, p := range t.Preamble {
			fmt.Fprintf(w, "%s: %s  \n", strings.ToUpper(p[0][:1])+p[0][1:], p[1])
		}
		fmt.Fprintf(w, "\n| %s |\n|%s\n", strings.Join(t.Header, " | "), strings.Repeat("---|", len(t.Header)))
		for _, row := range t.Rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		for _, n := range t.Notes {
			fmt.Fprintf(w, "\n%s\n", n)
		}
		return nil
	}
	for _, p := range t.Preamble {
		fmt.Fprintf(w, "%-7s %s\n", p[0], p[1])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(t.Header, "\t")+"\t")
	for _, row := range t.Rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range t.Notes {
		fmt.Fprintln(w, n)
	}
	return nil
}
