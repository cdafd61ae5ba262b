package main

import (
	"flag"

	"github.com/glmul/glmul/glcompute"
)

// deviceFlags are the flags that choose the OpenGL context, shared by every
// subcommand.
type deviceFlags struct {
	backend     string
	device      int
	verbose     bool
	ignoreTuned bool
}

func (d *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.backend, "backend", "auto", "OpenGL context: auto|glfw|egl (auto: a hidden GLFW window where a display exists, headless EGL otherwise)")
	fs.IntVar(&d.device, "device", 0, "EGL device `index` from -list-devices (0: a hardware GPU first, else Mesa's software device)")
	fs.BoolVar(&d.verbose, "v", false, "verbose: line-numbered shader source on compile errors")
	fs.BoolVar(&d.ignoreTuned, "ignore-tuned", false, "use the built-in fast kernel configuration, not the one glmul tune cached")
}

func (d *deviceFlags) check() error {
	if d.device < 0 {
		return usagef("-device must be 0 (automatic) or an index from -list-devices (got %d)", d.device)
	}
	if _, err := glcompute.ParseBackend(d.backend); err != nil {
		return usagef("-backend: %v", err)
	}
	return nil
}

func (d *deviceFlags) open() (*glcompute.Device, error) {
	return glcompute.Open(&glcompute.Options{Backend: glcompute.Backend(d.backend), Device: d.device,
		Verbose: d.verbose, IgnoreTuned: d.ignoreTuned})
}
