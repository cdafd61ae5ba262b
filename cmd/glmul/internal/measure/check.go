package measure

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/validate"
)

// PendingCheck is the check of a product's C, started before C is made
// (StartCheck). Where the check is Freivalds' in bands (checkInBands), a
// goroutine computes what reads A and B alone, B·x (validate.NewRows)
// and A's side of each band in turn (validate.Rows.PrepareA), while the
// GPU makes C, and checks each band of C whose rows have all arrived
// (Arrived); Check does the rest, with check's result bit for bit.
// Other checks run whole in Check.
type PendingCheck struct {
	mode   validate.Mode
	in     *Inputs
	rows   int  // rows a band
	banded bool // a goroutine prepares Freivalds' check
	stop   atomic.Bool
	wake   chan struct{} // a band may have arrived, or stop was set
	done   chan struct{} // closed once the goroutine ended
	// Set by the goroutine, read once done is closed:
	f       *validate.Rows
	bands   []*validate.PreparedRows // A's side of bands 0, 1, …
	checked []bool                   // bands whose C was checked
	beside  atomic.Int32             // how many, counted as they are
	ready   atomic.Int32             // len(bands), counted as they are made
	// C's arrivals (Arrived), under mu:
	mu       sync.Mutex
	cols     []int32 // columns arrived, per row of C
	complete []int   // rows with all their columns, per band
	again    bool    // a row received more than n columns: Check starts afresh
}

// StartCheck starts the check of in.C in mode (Auto resolved by the
// shape) as check makes it, for a product the caller is about to make:
// it must not change A or B until Stop or Check. Without beside, nothing
// runs before Check (for a product computed on the CPU's own cores).
func StartCheck(mode validate.Mode, in *Inputs, beside bool) *PendingCheck {
	return startCheck(mode, in, checkBand, beside)
}

// startCheck is StartCheck with bands of at least minFreivalds
// multiply-adds (checkInBands).
func startCheck(mode validate.Mode, in *Inputs, minFreivalds int, beside bool) *PendingCheck {
	if mode == validate.Auto || mode == "" {
		mode = validate.Choose(in.A.Rows, in.A.Cols, in.B.Cols)
	}
	m := in.A.Rows
	p := &PendingCheck{mode: mode, in: in, rows: bandRows(mode, in, minFreivalds, validate.AutoFullLimit), done: make(chan struct{})}
	p.banded = beside && mode == validate.Freivalds && p.rows < m
	if !p.banded {
		close(p.done)
		return p
	}
	nb := (m + p.rows - 1) / p.rows
	p.wake, p.checked = make(chan struct{}, 1), make([]bool, nb)
	p.cols, p.complete = make([]int32, m), make([]int, nb)
	go func() {
		defer close(p.done)
		in.Wait()
		// Three quarters of the CPUs: the pass's copy goroutines need
		// the rest (docs/PERFORMANCE.md, "The whole process at 32768").
		procs := max(1, runtime.GOMAXPROCS(0)*3/4)
		p.f = validate.NewRowsOn(in.B, validate.FreivaldsVectors, rand.New(rand.NewPCG(in.Seed, 2)), procs) // drawn as checkInBands draws
		for r0 := 0; r0 < m && !p.stop.Load(); r0 += p.rows {
			p.bands = append(p.bands, p.f.PrepareA(rowsOf(in.A, r0, min(m, r0+p.rows)), r0))
			p.ready.Add(1)
			p.checkArrived()
		}
		for !p.stop.Load() && !p.allChecked() {
			<-p.wake
			p.checkArrived()
		}
	}()
	return p
}

// Mode is the check's mode, Auto resolved.
func (p *PendingCheck) Mode() validate.Mode { return p.mode }

// Arrived records that rows [r0, r0+rows) and columns [c0, c0+cols) of
// C are final (glcompute.MulOptions.Arrived): a band whose rows have all
// their columns is checked beside the pass. Quick, for the device's
// thread; a no-op where nothing is prepared beside.
func (p *PendingCheck) Arrived(r0, c0, rows, cols int) {
	if !p.banded {
		return
	}
	n := int32(p.in.B.Cols)
	p.mu.Lock()
	for i := r0; i < r0+rows; i++ {
		p.cols[i] += int32(cols)
		switch {
		case p.cols[i] == n:
			p.complete[i/p.rows]++
		case p.cols[i] > n:
			p.again = true
		}
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// arrivedBand reports whether every row of band b has received all its
// columns, and no row of C more than that.
func (p *PendingCheck) arrivedBand(b int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.again && p.complete[b] == min(p.in.A.Rows, (b+1)*p.rows)-b*p.rows
}

// arrivedTwice reports whether a row of C received more columns than it
// has: a block named twice.
func (p *PendingCheck) arrivedTwice() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.again
}

// checkArrived checks C's side of the prepared bands that have arrived.
func (p *PendingCheck) checkArrived() {
	m := p.in.A.Rows
	for b, band := range p.bands {
		if !p.checked[b] && !p.stop.Load() && p.arrivedBand(b) {
			r0 := b * p.rows
			band.Check(rowsOf(p.in.C, r0, min(m, r0+p.rows)))
			p.checked[b] = true
			p.beside.Add(1)
		}
	}
}

// allChecked reports whether every band was checked.
func (p *PendingCheck) allChecked() bool {
	return len(p.bands) == len(p.checked) && !slices.Contains(p.checked, false)
}

// Stop stops the goroutine after its band in progress, or after B·x,
// and waits for it: for a product that failed, and for Check.
func (p *PendingCheck) Stop() {
	p.stop.Store(true)
	if p.wake != nil {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	<-p.done
}

// Check validates in.C as check does, calling progress, if set, as check
// does; once. The bands not checked beside the pass are checked here,
// A's side too where it was not prepared, rather than waited for. Where
// a row of C received more columns than it has (a block named again,
// perhaps after its band was checked), the whole check runs afresh.
func (p *PendingCheck) Check(progress func(done, total int)) validate.Result {
	p.Stop()
	if !p.banded || p.arrivedTwice() {
		return check(p.mode, p.in, progress)
	}
	p.f.SetProcs(0) // the product is done: every CPU for the bands left
	m := p.in.A.Rows
	for b, r0 := 0, 0; r0 < m; b, r0 = b+1, r0+p.rows {
		r1 := min(m, r0+p.rows)
		if b == len(p.bands) {
			p.bands = append(p.bands, p.f.PrepareA(rowsOf(p.in.A, r0, r1), r0))
		}
		if !p.checked[b] {
			p.bands[b].Check(rowsOf(p.in.C, r0, r1))
		}
		if progress != nil {
			progress(r1, m)
		}
	}
	return p.f.Result()
}

// check validates in.C as validate.Check(mode, …) does, mode resolved
// (not Auto). A check long enough to want a progress bar runs in about a
// hundred bands of rows through validate.Panels, which checks each row
// exactly as the whole check would, calling progress, if set, after
// each; a shorter one is one validate.Check. The bands depend on the
// shape only, never on progress.
func check(mode validate.Mode, in *Inputs, progress func(done, total int)) validate.Result {
	return checkInBands(mode, in, progress, checkBand, validate.AutoFullLimit)
}

// checkInBands is check with bands of at least minFreivalds multiply-adds
// in mode Freivalds and minFull in mode Full.
func checkInBands(mode validate.Mode, in *Inputs, progress func(done, total int), minFreivalds, minFull int) validate.Result {
	rng := rand.New(rand.NewPCG(in.Seed, 2))
	m, rows := in.A.Rows, bandRows(mode, in, minFreivalds, minFull)
	if rows >= m {
		return validate.Check(mode, in.A, in.B, in.C, rng)
	}
	p := validate.NewPanels(mode, in.B, rng)
	for r0 := 0; r0 < m; r0 += rows {
		r1 := min(m, r0+rows)
		p.Check(rowsOf(in.A, r0, r1), rowsOf(in.C, r0, r1), r0)
		if progress != nil {
			progress(r1, m)
		}
	}
	return p.Result()
}

// bandRows returns the rows of a band of checkInBands: m where the
// check is one piece.
func bandRows(mode validate.Mode, in *Inputs, minFreivalds, minFull int) int {
	m, k, n := in.A.Rows, in.A.Cols, in.B.Cols
	switch mode {
	case validate.Freivalds: // m·(k+n)·vectors multiply-adds
		return max(m/bands+1, minFreivalds/max(1, (k+n)*validate.FreivaldsVectors))
	case validate.Full: // m·k·n, Auto's own range in one piece
		return max(m/bands+1, minFull/max(1, k*n))
	}
	return m
}

// bands is about how many bands of rows a long check runs in, and
// checkBand the fewest multiply-adds of a band of Freivalds' check: 64
// times Rows's parallelMin, enough for every CPU of a large machine.
const (
	bands     = 100
	checkBand = 1 << 26
)

// rowsOf returns rows [r0, r1) of g.
func rowsOf(g blas32.General, r0, r1 int) blas32.General {
	return blas32.General{Rows: r1 - r0, Cols: g.Cols, Stride: g.Stride, Data: g.Data[r0*g.Stride : (r1-1)*g.Stride+g.Cols]}
}

// fillNaN sets the elements of c to NaN, in bands of rows over the CPUs:
