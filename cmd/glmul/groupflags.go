package main

import "github.com/glmul/glmul/glcompute"

// groupRefusal is a flag that a subcommand's -devices does not take:
// refused where set, with why.
type groupRefusal struct {
	set bool
	why string
}

// checkDevicesFor reads the -devices list of subcommand cmd ("bench")
// with checkDevices (which refuses an index EGL does not list), and
// refuses what the main command's checkGroupFlags refuses with it:
// -device, and the GLFW and GLES back ends; then each refusal set, the first one found. Its usage
// errors name cmd, as its other flags' do.
func checkDevicesFor(cmd, devices string, dev deviceFlags, refusals ...groupRefusal) ([]int, error) {
	list, err := checkDevices(devices)
	if err != nil {
		return nil, usagef("%s: %v", cmd, err)
	}
	refusals = append([]groupRefusal{
		{dev.device != 0, "-devices and -device: name the devices in -devices"},
		{dev.backend == string(glcompute.BackendGLFW) || dev.backend == string(glcompute.BackendGLES),
			"-devices opens one headless EGL context a GPU: leave -backend auto or egl"},
	}, refusals...)
	for _, r := range refusals {
		if r.set {
			return nil, usagef("%s: %s", cmd, r.why)
		}
	}
	return list, nil
}
