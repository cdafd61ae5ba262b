package glcompute

import (
	"fmt"

	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// tuning returns what measuring and tuning ask of d beyond its products:
// the kernels it can run and would choose, their programs, its staging
// (package tuner gives it to glmul's tune, bench and table commands).
func (d *Device) tuning() tuning.Device {
	d.mustBeOpen()
	return tuner{d}
}

// tuner is the tuning.Device that tuning returns (tuner.Of).
type tuner struct{ d *Device }

// Candidates: the cpu family's on Mesa llvmpipe (OpenGL on the CPU) where
// the context can run it, else the fast family's.
func (t tuner) Candidates() []string {
	d := t.d
	d.mustBeOpen()
	if !tuning.OnCPU(d.tuningDriver()) || d.fitsSpec("cpu") != nil {
		return tuning.FastCandidates()
	}
	var out []string
	for _, c := range shaders.CPUCandidates() {
		out = append(out, "cpu:"+c.String())
	}
	return out
}

func (t tuner) Fits(spec string) error {
	t.d.mustBeOpen()
	return t.d.fitsSpec(spec)
}

func (t tuner) KernelFor(m, k, n int) string {
	t.d.mustBeOpen()
	return t.d.kernelFor(m, k, n)
}

func (t tuner) ProgramBinary(spec string) ([]byte, error) {
	d := t.d
	d.mustBeOpen()
	if spec == "" || spec == "fast" {
		spec = d.info.DefaultKernel
	}
	var data []byte
	var err error
	d.call(func() {
		var p *program
		if p, err = d.programNamed(spec); err != nil {
			return
		}
		_, data = p.prog.Binary()
		if data == nil {
			err = fmt.Errorf("%w: the driver returns no program binary for %s", ErrUnsupported, spec)
		}
	})
	return data, err
}

func (t tuner) Staging() string {
	d := t.d
	var s *staging.Stager
	d.call(func() { s = d.stage() })
	how := "glMapBufferRange per chunk"
	if s.Persistent {
		how = "persistent mapping"
	}
	out := fmt.Sprintf("%s, 2×2 staging buffers of up to %s, %d copy goroutines", how, formatBytes(float64(s.Bytes)), s.Workers)
	if s.Persistent && d.opts.StagingBytes == 0 {
		out += fmt.Sprintf(" (a streamed panel pass: %s)", formatBytes(unitStagingBytes))
	}
	return out
}

// PrepareStaging: allocating and pinning host-visible memory costs tens
// of milliseconds on NVIDIA; made while the caller goes on (making the
// inputs, say), Mul finds the buffers ready. Borrowed: at once, on the
// host's thread.
func (t tuner) PrepareStaging() {
	d := t.d
	d.mustBeOpen()
	if d.borrowed {
		d.call(func() { d.stage().Prepare() })
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released {
		panic("glcompute: use of a released Device")
	}
	d.thread.Go(func() { d.stage().Prepare() }) // the thread is idle: no call holds d.mu
}
