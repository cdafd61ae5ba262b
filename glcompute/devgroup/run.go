package devgroup

import (
	"cmp"
	"fmt"
	"strings"
	"sync"

	"github.com/glmul/glmul/glcompute/internal/link"
)

// panelsPer is how many column panels of C a group hands out per device:
// enough that a faster device takes more and the last panels finish
// together; few enough that each fills the GPU.
const panelsPer = 4

// minCols is the narrowest column panel a group hands out.
const minCols = 512

// run is one Group.Mul's column panels: which are handed out, which are
// done and by whom, and the panels a failed device gives back.
type run struct {
	mu     sync.Mutex
	n      int // C's columns
	cols   int // a panel's
	panels int
	next   int   // the next panel never handed out
	retry  []int // panels given back by a failed device
	// doubles: a device's first claim takes two adjacent panels where
	// enough are left (claim); started says which devices have claimed.
	doubles  bool
	started  []bool
	claimed  [][]int
	landed   []bool
	left_    int
	done     []int // panels done, by device
	doneCols []int // their columns
	reruns   []int
	progress func(done, total int)
	fault    func(device, panel int) error
}

// newRun cuts C's n columns into panels for g's devices.
func (g *Group) newRun(n int, progress func(done, total int)) *run {
	devices := len(g.devs)
	panels := min(devices*panelsPer, max(1, n/cmp.Or(g.minCols, minCols)))
	cols := roundUp((n+panels-1)/panels, 4)
	if cols >= 256 {
		cols = roundUp(cols, 64) // whole tiles of the fast kernels
	}
	panels = (n + cols - 1) / cols
	return &run{n: n, cols: cols, panels: panels, doubles: panels >= 2*devices+2, started: make([]bool, devices),
		claimed: make([][]int, devices), landed: make([]bool, panels),
		left_: panels, done: make([]int, devices), doneCols: make([]int, devices), reruns: make([]int, devices),
		progress: progress, fault: g.fault}
}

func roundUp(x, align int) int { return (x + align - 1) / align * align }

// widest is the most columns a claim hands out: two panels' where a
// device's first claim may take two.
func (r *run) widest() int {
	if r.doubles {
		return min(r.n, 2*r.cols)
	}
	return r.cols
}

// claimer is how device dev takes its panels from r.
func (r *run) claimer(dev int) link.Claim {
	return func(widest int) (c0, cols int, landed func(), fault error, ok bool) {
		p, count, rerun, ok := r.claim(dev, widest)
		if !ok {
			return 0, 0, nil, nil, false
		}
		if r.fault != nil {
			fault = r.fault(dev, p)
		}
		c0 = p * r.cols
		return c0, min(count*r.cols, r.n-c0), func() { r.land(dev, p, count, rerun) }, fault, true
	}
}

// claim hands device dev its next panels, count of them from p: one
// given back first; else, as the device's first claim of a run with
// doubles (panels enough for every device's first two and two more) to
// a device that takes their width, the next two never handed out: a device's first panel waits for all of A
// to come up, a cost that twice the columns' kernels hide twice as well
// (docs/PERFORMANCE.md, "Streamed units"); else the next one never
// handed out; false when none is left.
func (r *run) claim(dev, widest int) (p, count int, rerun bool, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count = 1
	switch {
	case len(r.retry) > 0:
		p, r.retry = r.retry[0], r.retry[1:]
		rerun = true
	case r.next < r.panels:
		p = r.next
		if r.doubles && !r.started[dev] && r.next+2 <= r.panels && min(2*r.cols, r.n-p*r.cols) <= widest {
			count = 2
		}
		r.next += count
	default:
		return 0, 0, false, false
	}
	r.started[dev] = true
	for q := p; q < p+count; q++ {
		r.claimed[dev] = append(r.claimed[dev], q)
	}
	return p, count, rerun, true
}

// land records panels [p, p+count) done by device dev.
func (r *run) land(dev, p, count int, rerun bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for q := p; q < p+count; q++ {
		r.landed[q] = true
		r.left_--
		r.done[dev]++
		r.doneCols[dev] += min(r.cols, r.n-q*r.cols)
		if rerun {
			r.reruns[dev]++
		}
		if r.progress != nil {
			r.progress(r.panels-r.left_, r.panels)
		}
	}
}

// requeue gives back the panels device dev took and did not finish.
func (r *run) requeue(dev int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.claimed[dev] {
		if !r.landed[p] {
			r.retry = append(r.retry, p)
		}
	}
	r.claimed[dev] = nil
}

// retried reports whether panels wait to be rerun.
func (r *run) retried() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.retry) > 0
}

// left is how many panels are not done.
func (r *run) left() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.left_
}

// failure is the error of a product every device failed.
func (r *run) failure(shares []Share) error {
	var errs deviceErrors
	for i, sh := range shares {
		if sh.Err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i+1, sh.Err))
		}
	}
	return fmt.Errorf("devgroup: every device of the group failed, %d of %d column panels of C not computed (%w)",
		r.left(), r.panels, errs)
}

// deviceErrors is the errors of a group's devices: its message names
// each, on one line; errors.Is and As find each, and what each wraps.
type deviceErrors []error

func (e deviceErrors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e deviceErrors) Unwrap() []error { return e }
