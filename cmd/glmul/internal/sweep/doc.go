// Package sweep ranks kernel configurations for glmul tune: one noisy pass
// over every candidate, then the leaders measured again (Sweep), ranked by
// validity and rate (Rank). It is pure Go: what a measurement is belongs
// to the caller.
package sweep
