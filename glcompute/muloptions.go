package glcompute

import (
	"context"
	"time"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/tuning"
)

// defaultMaxGroups is the paper's cap on work groups per dispatch and axis
// (64×64), which keeps each dispatch short enough for Windows' GPU watchdog.
const defaultMaxGroups = dispatch.DefaultMaxGroups

// MulOptions configure one Mul. A nil *MulOptions means the zero value of
// every field.
//
// A negative count, size or duration panics (a programmer error).
type MulOptions struct {
	// Kernel names the compute shader as shaders.Lookup reads it:
	// "tiled32" (the paper's), "fast" (the device's tuned or built-in
	// configuration, Info.DefaultKernel) or a configuration such as
	// "fast:128x128x8_8x8". Zero value "": "fast". Mul64 reads float64
	// kernels: "dfast" (the device's, Info.Float64Kernel) or a
	// configuration such as "dfast:128x128x8_8x8_db"; "": "dfast".
	Kernel string
	// MaxGroups caps the work groups per dispatch along each axis. Zero
	// value: 64, the paper's cap, which keeps each dispatch short enough
	// for Windows' GPU watchdog.
	MaxGroups int
	// SplitK splits the inner dimension across this many slices of work
	// groups, each writing a partial C that a second pass adds up: for
	// products whose result has too few tiles to fill the GPU (64×4096×64
	// is one tile). Fast kernel only; a product in panels is not split.
	// Zero value: chosen from the size of the result's grid
	// (tuning.AutoSplitK: only grids under about a wave of the device's
	// work groups, 128 on a GPU, are split); 1:
	// no split. On Mesa's llvmpipe, K is split at least as many ways as
	// its loop limit needs, in panels too (docs/DRIVERS.md, "Mesa's
	// llvmpipe and long K").
	SplitK int
	// Progress, if set, is called as each block of C arrives in host
	// memory (Timings.Steps of them), with the number done and the total.
	// It runs on the device's thread and must not call the Device. Zero
	// value: no calls.
	Progress func(done, total int)
	// Arrived, if set, is called as each block of C of the pipelined
	// pass arrives in host memory, before Progress, with its first row
	// and column and its shape, in elements. The pass writes that block
	// no more: a caller may read it while Mul goes on (to check C as it
	// arrives). It runs on the device's thread and must not call the
	// Device. A device group (devgroup) refuses it. Zero value: no calls.
	Arrived func(r0, c0, rows, cols int)
	// Context, if set, is checked between the steps of the pipelined pass
	// (bands or panels): once it is done, Mul stops after the step in
	// progress and returns its error. A single dispatch cannot be stopped.
	// Zero value: nil, never stopped.
	Context context.Context
	// MaxBinding lowers the bytes one matrix may take in one shader
	// storage binding below the driver's GL_MAX_SHADER_STORAGE_BLOCK_SIZE,
	// and MaxGPUMemory caps the bytes of GPU buffers a product may use
	// (A, B, C, A's transpose, and a K split's or stream-K's workspace,
	// which a product runs without where the cap leaves no room for it).
	// A product over either runs in panels (Timings.Panels), streaming
	// A again for every column panel of B when all of A does not fit:
	// lowering them makes small products exercise those paths. Zero
	// values: the driver's limit, and no memory cap.
	MaxBinding, MaxGPUMemory int64
	// Measure, if set, is called once the product is planned and its GPU
	// buffers are allocated, before the pipelined pass that gives C: it
	// may run the product's stages one at a time (upload, whole runs,
	// readback) to time them; whatever it leaves in the
	// buffers, the pass then computes C afresh. It runs on the device's
	// thread and must not call the Device. Mul reads A and B, and writes
	// C, only in the stages the hook runs (Upload, ReadBack) and once it
	// has returned, so a caller may still be making them while a hook
	// that waits for them runs. An error it returns ends Mul with it. glmul's measurements (warm-up, repetitions, the GL
	// timer) are made so, outside the library. Zero value: the product
	// runs once, pipelined.
	Measure func(tuning.Stages) error
}

// check panics on a negative field.
func (o *MulOptions) check() {
	for _, f := range []struct {
		v    int64
		name string
	}{
		{int64(o.MaxGroups), "glcompute: MulOptions.MaxGroups is negative"},
		{int64(o.SplitK), "glcompute: MulOptions.SplitK is negative"},
		{o.MaxBinding, "glcompute: MulOptions.MaxBinding is negative"},
		{o.MaxGPUMemory, "glcompute: MulOptions.MaxGPUMemory is negative"},
	} {
		if f.v < 0 {
			panic(f.name)
		}
	}
}

// Layout is how a product was laid out on the GPU: its kernel, its
// dispatches and work groups, its K split, edge strips and panels.
type Layout struct {
	// Kernel is the spec of the kernel that ran ("fast:128x128x8_8x8").
	Kernel string `json:"kernel"`
	// Dispatches is the number of compute dispatches of one whole product
	// (for a product in panels, of all its panels in the pass).
	Dispatches int `json:"dispatches"`
	// Splits is the number of slices K was split into (MulOptions.SplitK);
	// 1 without split-K.
	Splits int `json:"k_splits"`
	// EdgeKernel, where not "", computed the strips of C past the kernel's
	// whole tiles, in EdgeGroups work groups beside the interior's (Groups
	// then counts the interior's); see tuning.UseEdges. These describe the
	// plan of the whole product; the bands of a pipelined pass plan their
	// own interiors and strips.
	EdgeKernel string `json:"edge_kernel,omitempty"`
	EdgeGroups int    `json:"edge_groups,omitempty"`
	// StreamKTiles, where not 0, is how many tiles of C after whole waves
	// of them StreamKGroups work groups shared, each taking an equal run of
	// their K steps, a second pass summing the pieces (stream-K; see
	// tuning.UseStreamK). Groups then counts the tiles.
	StreamKTiles  int `json:"stream_k_tiles,omitempty"`
	StreamKGroups int `json:"stream_k_groups,omitempty"`
	// Groups is the number of work groups along x (columns) and y (rows)
	// (over all panels of a product run in panels).
	Groups [2]int `json:"groups"`
	// Panels describes the panel plan of a product run in panels (see
	// MulOptions.MaxBinding), "" for one run in one piece.
	Panels string `json:"panels,omitempty"`
}

// Timings of one Mul: its layout and its pipelined pass. Times are wall
// clock on the CPU, except GPU's.
type Timings struct {
	Layout
	// EndToEnd is the wall time of the pipelined pass: from A and B in
	// host memory to C in host memory, in Steps blocks of C (row bands of
	// C, or panels), uploading the next block's operands and reading back
	// the last block of C while the GPU computes the current one. Context
	// creation and a Measure hook are not in it.
	EndToEnd time.Duration `json:"end_to_end_ns"`
	Steps    int           `json:"pipeline_steps"`
	// Streamed: the pass moved A and C with compute passes beside the
	// kernel's (a streamed pass: docs/LIBRARY.md, "Host matrices and
	// transfers, in detail").
	Streamed bool `json:"streamed,omitempty"`
	// Upload and Readback are the host's busy time within the pass copying
	// into and out of the staging buffers. Compute holds one element, the
	// GPU's time with the pass's dispatches in flight: by GL_TIMESTAMP
	// queries where the GL timer gives real times (GPU then holds the same
	// element; nil otherwise), else the wall time of the dispatch calls, as
	// on a driver that computes within them (Mesa's llvmpipe). Their sum
	// exceeds EndToEnd by what overlapped; Compute never exceeds it.
	// (Slices because a Mul could once repeat its runs; MulOptions.Measure
	// does that now.)
	Upload   time.Duration   `json:"upload_ns"`
	Compute  []time.Duration `json:"compute_ns"`
	GPU      []time.Duration `json:"gpu_ns,omitempty"`
	Readback time.Duration   `json:"readback_ns"`
	// UploadBytes and ReadbackBytes are the bytes the pass moved each way.
	UploadBytes   int64 `json:"upload_bytes"`
	ReadbackBytes int64 `json:"readback_bytes"`
}

// stopped returns the error of o.Context once it is done, else nil.
func (o *MulOptions) stopped() error {
	if o.Context == nil {
		return nil
	}
	return o.Context.Err()
}
