//go:build !glmul_trace || !linux

// Package trace times the stages of glcompute's start-up in a diagnostic
// build: with the glmul_trace build tag (go build -tags glmul_trace),
// Stage prints to stderr how long each stage took since the last one
// (docs/PERFORMANCE.md, "Start-up of a new process"). Without the tag,
// Stage does nothing and costs nothing: the library prints nothing. The
// diagnostic build is Linux's (it names OS threads).
package trace

// On is true in the diagnostic build: code that only formats what Stage
// prints sits behind it.
const On = false

// Stage marks the end of a stage named stage ("" starts the clock).
func Stage(stage string) {}
