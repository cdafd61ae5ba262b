package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// wantBar reports whether a -progress mode means a bar on stderr: "on", or
// "auto" with stderr a terminal.
func wantBar(mode string, stderr io.Writer) bool {
	switch mode {
	case "on":
		return true
	case "auto":
		f, ok := stderr.(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
	return false
}

// checkProgress validates a -progress value; cmd prefixes the message.
func checkProgress(cmd, v string) error {
	switch v {
	case "auto", "on", "off":
		return nil
	}
	return usagef("%s-progress: unknown value %q: use auto, on or off", cmd, v)
}

// newBar returns a progress bar on stderr, or nil when progress is off or
// (auto) stderr is not a terminal.
func newBar(mode string, stderr io.Writer, what string) *progressbar.ProgressBar {
	if !wantBar(mode, stderr) {
		return nil
	}
	return progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100_000_000),
	)
}

// stageBar returns a progress function that shows a stage of a command
// on a bar of its own on stderr, described as what, made at the first
// call; nil where -progress mode (auto|on|off) shows no bar. Calls must
// not overlap.
func stageBar(mode string, stderr io.Writer, what string) func(done, total int) {
	if !wantBar(mode, stderr) {
		return nil
	}
	var bar *progressbar.ProgressBar
	var once sync.Once
	return func(done, total int) {
		once.Do(func() { bar = newBar(mode, stderr, what) })
		bar.ChangeMax(total)
		bar.Set(done)
	}
}

// progress shows a command's progress through a known number of steps: a
// bar on a terminal, a line a step otherwise ("auto" and "on" modes), or
// nothing ("off").
type progress struct {
	bar   *progressbar.ProgressBar
	lines io.Writer // nil: no lines
	count int
}

// newProgress returns the progress of total steps described by what, in
// -progress mode (auto|on|off).
func newProgress(mode string, stderr io.Writer, what string, total int) *progress {
	p := &progress{bar: newBar(mode, stderr, what)}
	switch {
	case p.bar != nil:
		p.bar.ChangeMax(total)
	case mode != "off":
		p.lines = stderr
	}
	return p
}

// step records one step done; line describes it where lines are shown.
func (p *progress) step(line string) {
	p.count++
	if p.bar != nil {
		p.bar.Set(p.count)
	} else if p.lines != nil {
		fmt.Fprintln(p.lines, line)
	}
}

// done ends the bar.
func (p *progress) done() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// positive returns a usage error unless every value of name, value pairs
// is at least 1; cmd prefixes the message.
func positive(cmd string, pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if v := pairs[i+1].(int); v < 1 {
			return usagef("%s%s must be at least 1 (got %d)", cmd, pairs[i], v)
		}
	}
	return nil
}
