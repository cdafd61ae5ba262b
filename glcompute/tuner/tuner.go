// Package tuner is what glmul's tune, bench and table commands (and
// package stream, for the kernel a panel runs) ask of a glcompute Device
// beyond a host's products: the kernels it can run and would choose,
// their programs and its staging (Of), and the library's defaults they
// report. A host has no need of it.
package tuner

import (
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/glcompute/tuning"
)

// Of returns what measuring and tuning ask of d. It panics on a Device
// not made by Open or NewDeviceFromCurrent. Safe from any goroutine; the
// result's methods follow d's thread rule.
func Of(d *glcompute.Device) tuning.Device { return link.Tuning(d).(tuning.Device) }

// MaxGroups is MulOptions.MaxGroups's zero value: the paper's cap of 64
// work groups per dispatch and axis, which keeps each dispatch short
// enough for Windows' GPU watchdog.
const MaxGroups = dispatch.DefaultMaxGroups

// StagingBytes is Options.StagingBytes's zero value: the size of each of
// the four staging buffers.
const StagingBytes = staging.DefaultBytes
