package main

import (
	"cmp"
	"context"
	"math"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cmd/glmul/internal/matfile"
	"github.com/glmul/glmul/glcompute"
)

// panelsInFlight is how many panels of A and C a float64 product holds
// in host memory: one being read, one on the GPU, one being checked or
// written, as stream.Mul's float32 product does (panelRows64 counts
// them).
const panelsInFlight = 3

// panel64 is one panel's host memory: its index, and its rows of A and C.
type panel64 struct {
	i    int
	a, c blas64.General
}

// stages64 runs a float64 product's panels through four stages that
// overlap, each on a goroutine of its own: reading A's rows, the GPU, the
// check (in order: its Freivalds vectors are drawn panel after panel)
// and writing C (on the caller's). Panels go from free to read, computed,
// checked and back to free once written. The first error, a panel that
// fails its check, or the product's Context stops them all.
type stages64 struct {
	p                             *panels64
	b                             blas64.General
	rows, total                   int
	ctx                           context.Context
	cancel                        context.CancelCauseFunc
	free, read, computed, checked chan *panel64
}

// overlap multiplies A by b (B, read) in total panels of rows rows,
// writing C to sink in order; see stages64.
func (p *panels64) overlap(sink matfile.Sink64, b blas64.General, rows, total int) error {
	k, n := p.r.K, p.r.N
	st := &stages64{p: p, b: b, rows: rows, total: total, free: make(chan *panel64, panelsInFlight),
		read: make(chan *panel64, 1), computed: make(chan *panel64, 1), checked: make(chan *panel64, 1)}
	st.ctx, st.cancel = context.WithCancelCause(p.ctx)
	defer st.cancel(nil)
	for range min(panelsInFlight, total) {
		st.free <- &panel64{a: blas64.General{Cols: k, Stride: k, Data: make([]float64, rows*k)},
			c: blas64.General{Cols: n, Stride: n, Data: make([]float64, rows*n)}}
	}
	var wg sync.WaitGroup
	wg.Go(st.reader)
	wg.Go(st.gpu)
	wg.Go(st.checker)
	st.writer(sink)
	// Every panel written, or the first error: the cause, nil where none
	// was. Then the stages stop, if they have not, on every way out.
	err := context.Cause(st.ctx)
	st.cancel(nil)
	wg.Wait()
	return err
}

// take receives from ch, or reports false once the product stopped or ch
// closed.
func (st *stages64) take(ch chan *panel64) (*panel64, bool) {
	select {
	case pn, ok := <-ch:
		return pn, ok
	case <-st.ctx.Done():
		return nil, false
	}
}

// give sends pn on ch, or reports false once the product stopped.
func (st *stages64) give(ch chan *panel64, pn *panel64) bool {
	select {
	case ch <- pn:
		return true
	case <-st.ctx.Done():
		return false
	}
}

// reader reads A's panels in order.
func (st *stages64) reader() {
	defer close(st.read)
	p := st.p
	for i := range st.total {
		pn, ok := st.take(st.free)
		if !ok {
			return
		}
		pn.i = i
		h := min(st.rows, p.r.M-i*st.rows)
		pn.a.Rows, pn.c.Rows = h, h
		t0 := time.Now()
		err := matfile.ReadRows64(p.a, pn.a, i*st.rows)
		p.r.Read += time.Since(t0)
		if err != nil {
			st.cancel(err)
			return
		}
		if !st.give(st.read, pn) {
			return
		}
	}
}

// gpu multiplies each panel read by B into its C, poisoned first with NaN
// so that an element the GPU leaves fails the check (K = 0, no device:
// C's rows are zero).
func (st *stages64) gpu() {
	defer close(st.computed)
	p := st.p
	for {
		pn, ok := st.take(st.read)
		if !ok {
			return
		}
		c := pn.c.Data[:pn.c.Rows*pn.c.Cols]
		if p.dev == nil {
			clear(c)
		} else {
			for i := range c {
				c[i] = math.NaN()
			}
			t0 := time.Now()
			t, err := mulPanel64(p.dev, pn.c, pn.a, st.b, &glcompute.MulOptions{Kernel: p.f.kernel, Context: st.ctx})
			p.r.GPU += time.Since(t0)
			if err != nil {
				st.cancel(err)
				return
			}
			p.r.Kernel = cmp.Or(p.r.Kernel, t.Kernel)
		}
		if !st.give(st.computed, pn) {
			return
		}
	}
}

// checker checks each panel computed, in order; a panel that fails stops
// the product (errNotValidated: C is discarded, so the rest need not be
// computed).
func (st *stages64) checker() {
	defer close(st.checked)
	p := st.p
	for {
		pn, ok := st.take(st.computed)
		if !ok {
			return
		}
		if p.dev != nil {
			t0 := time.Now()
			p.chk.panel(pn.a, st.b, pn.c, pn.i*st.rows)
			p.r.Check += time.Since(t0)
			if p.r.Validation = p.chk.result(); p.r.Validation.Err() != nil {
				st.cancel(errNotValidated)
				return
			}
		}
		if !st.give(st.checked, pn) {
			return
		}
	}
}

// writer writes each checked panel of C, in order, and frees its memory
// for the reader.
func (st *stages64) writer(sink matfile.Sink64) {
	p := st.p
	for done := 1; ; done++ {
		pn, ok := st.take(st.checked)
		if !ok {
			return
		}
		t0 := time.Now()
		err := sink.WriteRows(pn.c)
		p.r.Write += time.Since(t0)
		if err != nil {
			st.cancel(err)
			return
		}
		if p.progress != nil {
			p.progress(done, st.total)
		}
		if !st.give(st.free, pn) {
			return
		}
	}
}
