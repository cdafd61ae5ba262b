//go:build !glmul_trace

// Package trace times the stages of glcompute's start-up in a diagnostic
// build: with the glmul_trace build tag (go build -tags glmul_trace),
// Stage prints to stderr how long each stage took since the last one
// (docs/PERFORMANCE.md, "Start-up of a new process"). Without the tag,
// Stage does nothing and costs nothing: the library prints nothing.
package trace

// Stage marks the end of a stage named stage ("" starts the clock).
func Stage(stage string) {}
