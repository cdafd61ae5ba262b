// Package link lets glcompute's sibling packages (devgroup, glblas, pinned,
// stream, tuner) reach the parts of a Device they are built on without
// glcompute exporting them.
// glcompute sets these functions when it is initialised; their device,
// options, plan and timings are glcompute's own types (*Device,
// *MulOptions, its plan, Timings) passed as any, which only the two
// packages that meet here convert.
package link

import (
	"context"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// Claim hands a device of a group its next column panels of C, at most
// widest columns (a device that takes two at once says how many it can):
// the first column and width, landed to call once they are in host
// memory, and fault, an error they must fail with (tests); ok is false
// once none is left.
type Claim func(widest int) (c0, cols int, landed func(), fault error, ok bool)

var (
	// Member panics unless dev may join a group: open, and not borrowed
	// (a group runs each device's work on its own thread).
	Member func(dev any)
	// Options panics on opts (an *Options, nil: none) where Open would.
	Options func(opts any)
	// Product panics unless c = a·b is a product dev's Mul takes, checks
	// opts (nil: none) and reports an empty product.
	Product func(dev any, c, a, b blas32.General, opts any) (empty bool)
	// PlanUnit plans dev's part of a group product, one m×k by k×cols
	// column panel at a time (widest columns where it takes two), with
	// opts; streamed: where it can, in one streamed pass.
	PlanUnit func(dev, opts any, m, k, cols, widest int, streamed bool) (plan any, err error)
	// RunUnits runs on dev's thread, in one pipelined pass, the column
	// panels claim hands it, until none is left or the device fails.
	// ready is called once its buffers are made (or it failed first).
	RunUnits func(dev, plan any, c, a, b blas32.General, claim Claim, ready func()) (timings any, err error)
)

// For package stream: a product streamed through one Device's matrices.
var (
	// Own panics unless dev is open and owns its context (made by Open):
	// who names what needs it and why.
	Own func(dev any, who string)
	// Binding is the most bytes dev puts in one shader storage binding,
	// lowered to max where positive.
	Binding func(dev any, max int64) int64
	// MulKernel computes c = a·b, dev's Matrices, with the kernel spec
	// names ("" or "fast": Gemm's choice), as Gemm with β = 0.
	MulKernel func(c, a, b any, spec string) error
	// Hold records that a streamed product holds dev's GPU matrices until
	// it calls done: the Device's Release stops it with cancel and waits
	// for done. It fails where Release has begun.
	Hold func(dev any, cancel context.CancelCauseFunc) (done func(), err error)
)

// For package tuner: what glmul's tuner asks of a Device.
var (
	// Tuning returns dev's tuning.Device.
	Tuning func(dev any) any
)

// For package glblas: gonum's BLAS with the GPU's products.
var (
	// Driver returns dev's tuning.Driver (the zero Driver for
	// Options.Unseen), whose crossovers glblas applies.
	Driver func(dev any) any
	// Usable reports whether dev can take a product of host matrices
	// now: open, not released, and each rows×cols shape within its
	// limits.
	Usable func(dev any, shapes ...[2]int) bool
	// Product64 computes c = op(a)·op(b) in float64 on dev's GPU.
	Product64 func(dev any, c blas64.General, tA blas.Transpose, a blas64.General, tB blas.Transpose, b blas64.General) error
	// FirstTold sets bit in dev's record of the kinds of error a
	// Float64's Fallback heard and reports whether it was unset.
	FirstTold func(dev any, bit uint32) bool
	// Runs64 counts the float64 products dev ran on its GPU (tests).
	Runs64 func(dev any) int64
)

// For package pinned: host matrices the GPU maps.
var (
	// NewPinned allocates a rows×cols float32 matrix in a persistently
	// mapped buffer of dev's, zero-filled, rows padded to 4 floats, and
	// returns it with the function that releases it.
	NewPinned func(dev any, rows, cols int) (m blas32.General, release func(), err error)
)
