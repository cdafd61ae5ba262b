package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/streamhook"
)

// MulDevices is Mul over several Devices (a devgroup.Group's, say): B is
// read once and uploaded to each, and each panel of A goes to whichever
// device is free, so that a faster device takes more; C's rows are
// checked and written in order, as Mul's. A device that fails (its GPU
// stage cannot be made or B uploaded, or a panel's product fails) has its
// panels rerun on the others (Result.Devices says which and why); with
// none left, MulDevices returns their errors. Each device keeps B and two
// panels on its GPU, and the host 2·len(devs)+1 panels. One Device's
// Release stops the product, as Mul's does. It panics where Mul does, on
// no devices and on a Device listed twice. Safe from any goroutine.
func MulDevices(devs []*glcompute.Device, c RowWriter, a, b RowReader, o *Options) (Result, error) {
	if len(devs) == 0 {
		panic("stream: MulDevices of no devices")
	}
	for i, d := range devs {
		if slices.Contains(devs[:i], d) {
			panic("stream: MulDevices: a Device listed twice")
		}
	}
	return mulOn(devs, "MulDevices", c, a, b, o)
}

// DeviceShare is one device's part of a streamed product (Result.Devices).
type DeviceShare struct {
	// Kernel is the kernel of its whole panels.
	Kernel string
	// Panels is how many panels of C it computed, Reruns how many of
	// those a device that failed had taken first.
	Panels, Reruns int
	// GPU is its GPU stage's busy time: its panels' uploads, products
	// and readbacks (B's upload, beside the check's set-up, aside).
	GPU time.Duration
	// Err is why the device stopped during the product, if it did: its
	// panels then ran on the others.
	Err error
}

// heldPanels is how many panels of host memory circulate over devices
// devices: two a device (one computing, one being read back) and one
// more being read, checked or written; on one device hostPanels.
func heldPanels(devices int) int {
	if devices == 1 {
		return hostPanels
	}
	return 2*devices + 1
}

// gpuSet is the GPU stages of a product's devices, and what releases each
// (nil once released). A device whose stage could not be made or whose B
// failed to upload has its error in failed and takes no panels.
type gpuSet[M matrix] struct {
	stages   []gpuStage[M]
	releases []func()
	failed   []error
}

// holdGPUs makes each device's GPU stage (holdGPU). On one device its
// failure is the product's; on several, a device that fails is left out
// (failed), and the product fails only where every device did.
func holdGPUs[M matrix](ctx context.Context, devs []*glcompute.Device, cancel context.CancelCauseFunc, newGPU func(ctx context.Context, dev int) (gpuStage[M], error)) (*gpuSet[M], error) {
	gs := &gpuSet[M]{stages: make([]gpuStage[M], len(devs)), releases: make([]func(), len(devs)), failed: make([]error, len(devs))}
	for i, d := range devs {
		g, release, err := holdGPU(ctx, d, cancel, func(ctx context.Context) (gpuStage[M], error) { return newGPU(ctx, i) })
		gs.stages[i], gs.releases[i], gs.failed[i] = g, release, err
	}
	return gs, gs.anyLeft()
}

// anyLeft returns nil while a device has not failed, else the devices'
// errors: one device's as it is, several named by their place.
func (gs *gpuSet[M]) anyLeft() error {
	if len(gs.failed) == 1 {
		return gs.failed[0]
	}
	var errs []error
	for i, err := range gs.failed {
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("device %d of %d: %w", i+1, len(gs.failed), err))
	}
	return fmt.Errorf("stream: every device failed: %w", errors.Join(errs...))
}

// uploadB uploads b to every device that has not failed, at once; a
// device it fails on is left out (r.Devices says why). It returns
// anyLeft's error.
func (gs *gpuSet[M]) uploadB(b M, r *Result) error {
	var wg sync.WaitGroup
	for i, g := range gs.stages {
		if gs.failed[i] == nil {
			wg.Go(func() { gs.failed[i] = g.uploadB(b) })
		}
	}
	wg.Wait()
	for i, err := range gs.failed {
		if err != nil {
			r.Devices[i].Err = err
			gs.releaseOne(i)
		}
	}
	return gs.anyLeft()
}

// releaseOne releases device i's stage, once.
func (gs *gpuSet[M]) releaseOne(i int) {
	if gs.releases[i] != nil {
		gs.releases[i]()
		gs.releases[i] = nil
	}
}

// release releases every stage not yet released.
func (gs *gpuSet[M]) release() {
	for i := range gs.releases {
		gs.releaseOne(i)
	}
}

// gpus runs the GPU stages: one device's (gpu), or a group's (devices),
// then closes the check's channel, releases the stages and sums the
// devices' busy times into r.GPU.
func (st *stages[M]) gpus(gs *gpuSet[M], r *Result) {
	defer func() {
		close(st.back)
		gs.release()
		for _, sh := range r.Devices {
			r.GPU += sh.GPU
		}
	}()
	if len(gs.stages) == 1 {
		st.gpu(gs.stages[0], &r.Devices[0])
		return
	}
	s := &sched[M]{st: st, gs: gs, shares: r.Devices, retry: make(chan *panel[M], st.p.held), finished: make(chan struct{}), left: st.p.panels}
	for _, err := range gs.failed {
		if err == nil {
			s.live++
		}
	}
	var wg sync.WaitGroup
	for i := range gs.stages {
		if gs.failed[i] == nil {
			wg.Go(func() { s.device(i) })
		}
	}
	wg.Wait()
}

// sched hands a group's panels to its devices (device, one goroutine
// each): a panel of a device that failed (retry) before a new one read,
// so that the check, which takes panels in order, is not kept waiting.
// left counts the panels not yet computed: once none are, finished closes
// and the devices stop.
type sched[M matrix] struct {
	st       *stages[M]
	gs       *gpuSet[M]
	shares   []DeviceShare
	retry    chan *panel[M] // room for every panel: sends never wait
	finished chan struct{}
	mu       sync.Mutex // live, left, and gs.failed from here on
	live     int
	left     int
}

// device runs device i's GPU stage on the panels it takes (next), each
// step's computed panel to the check, until the panels are done, the
// product stopped, or the device failed (fail).
func (s *sched[M]) device(i int) {
	g, sh := s.gs.stages[i], &s.shares[i]
	var held []*panel[M] // taken and not yet returned computed
	read := s.st.read
	for {
		pn, ok := s.next(&read, len(held) > 0)
		if !ok {
			return
		}
		if pn != nil {
			held = append(held, pn)
		}
		var done *panel[M]
		err := timeInto(&sh.GPU, func() (err error) { done, err = s.st.step(g, i, pn); return err })
		if err != nil {
			s.fail(i, err, held)
			return
		}
		if done != nil {
			held = slices.DeleteFunc(held, func(p *panel[M]) bool { return p == done })
			sh.Panels++
			if done.rerun {
				sh.Reruns++
			}
			if !s.computed(done) {
				return
			}
		}
	}
}

// next returns the panel a device takes: a failed device's first, else
// the next one read (*read is set to nil once the reader closed it).
// Holding one (its product running), a device that finds none waiting
// takes nil, to read back what it holds rather than keep it from the
// check. ok is false once the panels are done or the product stopped.
func (s *sched[M]) next(read *chan *panel[M], holding bool) (pn *panel[M], ok bool) {
	for {
		select {
		case pn := <-s.retry:
			return pn, true
		default:
		}
		if holding {
			select {
			case pn := <-s.retry:
				return pn, true
			case pn, open := <-*read:
				if !open {
					*read = nil
				}
				return pn, true
			default:
				return nil, true
			}
		}
		select {
		case pn := <-s.retry:
			return pn, true
		case pn, open := <-*read:
			if open {
				return pn, true
			}
			*read = nil
		case <-s.finished:
			return nil, false
		case <-s.st.ctx.Done():
			return nil, false
		}
	}
}

// computed hands pn to the check and counts it done, reporting false once
// the product stopped.
func (s *sched[M]) computed(pn *panel[M]) bool {
	if !s.st.give(s.st.back, pn) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left--; s.left == 0 {
		close(s.finished)
	}
	return true
}

// fail records device i's error, hands the panels it held to the others,
// and stops the product with every device's error where none is left.
func (s *sched[M]) fail(i int, err error, held []*panel[M]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shares[i].Err = err
	s.gs.failed[i] = err
	for _, pn := range held {
		pn.rerun = true
		s.retry <- pn
	}
	if s.live--; s.live == 0 {
		s.st.cancel(s.gs.anyLeft())
	}
}

// step is g.step(pn) on device dev, failing first where a test's
// streamhook.Fault says so.
func (st *stages[M]) step(g gpuStage[M], dev int, pn *panel[M]) (*panel[M], error) {
	if pn != nil && streamhook.Fault != nil {
		if err := streamhook.Fault(dev, pn.i); err != nil {
			return nil, errPanel("computing", st.p, pn.i, err)
		}
	}
	return g.step(pn)
}
