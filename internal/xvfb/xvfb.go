// Package xvfb starts a private X server (Xvfb) for tests whose GL
// contexts come through GLFW (GLX) on a machine without a display.
package xvfb

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Start starts Xvfb and returns its display (":N") and a function that
// stops it. Where Xvfb is missing or gives no display within 20 s, the
// display is "" and why is written to stderr, naming who (a package's
// tests) needs it. -displayfd makes Xvfb pick a free display number.
func Start(who string) (display string, stop func()) {
	stop = func() {}
	path, err := exec.LookPath("Xvfb")
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: no Xvfb on PATH; the GLFW tests need it (make deps installs it)\n", who)
		return "", stop
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "", stop
	}
	cmd := exec.Command(path, "-displayfd", "3", "-screen", "0", "64x64x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: starting Xvfb: %v\n", who, err)
		return "", stop
	}
	w.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n != "" {
			display = ":" + n
		}
	case <-time.After(20 * time.Second):
		fmt.Fprintf(os.Stderr, "%s: Xvfb gave no display within 20 s\n", who)
	}
	return display, func() {
		cmd.Process.Kill()
		cmd.Wait()
		r.Close()
	}
}
