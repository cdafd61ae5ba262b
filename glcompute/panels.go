package glcompute

import (
	"fmt"
	"slices"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/cause"
	"github.com/glmul/glmul/shaders"
)

// planPanels decides whether an m×k by k×n product runs in one piece or
// in panels, and plans the panels. A kernel that reads A transposed gives
// way to its natural stand-in (hp.kernels) where A's transpose does not
// fit beside A, B and C.
func (d *Device) planPanels(m, k, n int, hp *hostPlan) (plan dispatch.PanelPlan, paneled bool, err error) {
	o := &hp.o
	binding := d.info.MaxSSBOBlockSize
	if o.MaxBinding > 0 {
		binding = min(binding, o.MaxBinding)
	}
	binding = min(binding, 4*maxIndex)
	storage := binding
	viewed := func(k shaders.Kernel) int64 { // what one binding of k's may hold
		if k.Textures && d.texBlock > 0 { // a buffer texture may view less than a storage block
			return min(storage, d.texBlock)
		}
		return storage
	}
	kern := hp.kernels.kern
	binding = viewed(kern)
	al := kern.Align
	if max(m, k, n) > 1<<31 {
		return plan, false, fmt.Errorf("%w: a dimension of the %d×%d by %d×%d product is over 2³¹", ErrTooLarge, m, k, k, n)
	}
	// float64: the products of dimensions up to 2³¹ overflow int64 at 4 bytes.
	ld := func(cols int) float64 { return float64(roundUp(cols, al)) }
	a, b, c := 4*float64(m)*ld(k), 4*float64(k)*ld(n), 4*float64(m)*ld(n)
	if a+b+c >= 1<<62 { // byte counts a panel plan's int64 sums would overflow
		return plan, false, fmt.Errorf("%w: the %d×%d by %d×%d product's matrices take %s, more than any GPU holds", ErrTooLarge, m, k, k, n, formatBytes(a+b+c))
	}
	lim := float64(binding)
	fits := func(extra float64) bool {
		return a <= lim && b <= lim && c <= lim && extra <= lim && (o.MaxGPUMemory <= 0 || a+b+c+extra <= float64(o.MaxGPUMemory))
	}
	if kern.TransposeA { // A's transpose beside A, B and C; without room for it, A as it is
		if !hp.forcePanels && d.fits(shaders.Transpose()) == nil && fits(4*float64(k)*ld(m)) {
			return plan, false, nil
		}
		kern = hp.kernels.natural
		hp.kernels.kern = kern
		binding = viewed(kern) // the stand-in may read through textures where the default does not
		lim = float64(binding)
	}
	if fits(0) && !hp.forcePanels {
		return plan, false, nil
	}
	if !kern.Strided {
		return plan, false, cause.Mark(fmt.Errorf("%w: the %d×%d by %d×%d product does not fit one shader storage binding (%s) or the GPU memory allowed, and kernel %s cannot run in panels; use fast",
			ErrTooLarge, m, k, k, n, formatBytes(float64(binding)), kern.Spec()), cause.NoPanels)
	}
	if o.SplitK > 1 {
		return plan, false, fmt.Errorf("%w: the %d×%d by %d×%d product needs panels, and split-K does not run in panels; drop the split", ErrTooLarge, m, k, k, n)
	}
	// A K cut into panels is cut within the driver's loop budget too, so
	// that its panels need no split (planSplit).
	plan, err = dispatch.Panels(m, k, n, al, kern.TileM, kern.TileN, binding, o.MaxGPUMemory, d.maxKRange(kern))
	if err != nil {
		return plan, false, fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return plan, true, nil
}

// panelProduct is one Mul run in panels: the buffers of a B column panel
// (one a K panel), of A's panels (all of them, or two in turn when A is
// streamed) and of two C panels. Every method runs on the device thread.
type panelProduct struct {
	d    *Device
	o    *MulOptions
	plan dispatch.PanelPlan
	p    *program
	bufB []glw.Buffer
	bufA []glw.Buffer
	bufC [2]glw.Buffer
	// dispatches counts the pass's dispatches (Timings.Dispatches).
	dispatches int
	// splits slices of ksplit of K, where the driver's loop budget needs
	// them (loops.go; else 1): each step's kernel writes its partial
	// results into work, which red sums into the C panel, in steps of at
	// most rowsPer rows (0: a whole panel) so that work fits a binding.
	// Where K is cut into panels (within the loop budget: unsplit), red
	// adds each K panel's product, computed beside the sum so far in C's
	// buffer, to it (accumulate).
	splits, ksplit, rowsPer int
	red                     *program
	work                    glw.Buffer
	// blocks counts the blocks of C listed (their C buffers alternate),
	// and aUp says which of A's panel buffers the steps listed so far
	// upload (KeepA: each once).
	blocks int
	aUp    []bool
}

// mulPanels runs c = a·b panel by panel, pipelined: for each column panel
// of B, each row panel of A (uploaded once when A stays on the GPU), one
// step that computes the C panel while the next panels go up and the last
// C panel comes back.
func (d *Device) mulPanels(c, a, b blas32.General, hp *hostPlan, idle time.Duration) (t Timings, err error) {
	d.clearErrors()
	o, plan := &hp.o, hp.panels
	pp := &panelProduct{d: d, o: o, plan: plan}
	defer pp.release()
	defer d.unbindAll()
	if pp.p, err = d.programOf(hp.kernels.kern); err != nil {
		return t, err
	}
	t.Kernel, t.Panels = pp.p.kernel.Spec(), plan.String()
	k := pp.p.kernel
	t.Groups = [2]int{(plan.N + k.TileN - 1) / k.TileN, (plan.M + k.TileM - 1) / k.TileM} // over all panels
	if err := pp.planSplit(); err != nil {
		return t, err
	}
	t.Splits = pp.splits
	if err := pp.alloc(); err != nil {
		return t, err
	}
	if o.Measure != nil {
		if err := o.Measure(&stages{first: pp.runFirst, d: pp.d, idle: idle}); err != nil {
			return t, err
		}
	}
	pl := &pipeline{d: d, o: o, steps: pp.steps(c, a, b), report: o.Progress, words: pp.words()}
	pt, err := pl.run()
	if err != nil {
		return t, err
	}
	pt.fill(&t)
	t.Dispatches = pp.dispatches
	return t, nil
}

// steps lists the panels' steps of c = a·b, column panel by column
// panel, row panel by row panel: a step a band of rows (rowsPer) or, where
// K is cut, a step a K panel, C's block poisoned before its first and read
// back after its last. c and b may be a column range of the planned
// product's (a device group's column panel): their columns are cut by the plan's
// ColsPer. A's panels are uploaded where the device does not hold them
// yet (KeepA: once, for the first column panel), and C's blocks take the
// two C buffers in turn.
func (pp *panelProduct) steps(c, a, b blas32.General) []pipeStep {
	pl := pp.plan
	if pp.aUp == nil {
		pp.aUp = make([]bool, len(pp.bufA))
	}
	var steps []pipeStep
	for c0 := 0; c0 < pp.cols(b); c0 += pl.ColsPer {
		for i := 0; i < pl.RowPanels(); i++ {
			bufC := pp.bufC[pp.blocks%2]
			pp.blocks++
			if pl.KPanels() == 1 {
				steps = append(steps, pp.bands(c, a, b, i, c0, bufC)...)
				continue
			}
			for q := 0; q < pl.KPanels(); q++ {
				steps = append(steps, pp.kStep(c, a, b, i, c0, q, bufC))
			}
		}
	}
	return steps
}

// bands are the steps of row panel i and the column panel from c0, K
// whole: one, or one a band of rowsPer rows.
//
// Panels are not cut into bands that fit the staging buffers: at 32768
// that made dispatches of 256 rows, and the product slower
// (docs/PERFORMANCE.md, "The pipeline: upload, compute and readback
// overlapping", step 8).
func (pp *panelProduct) bands(c, a, b blas32.General, i, c0 int, bufC glw.Buffer) []pipeStep {
	pl := pp.plan
	r0 := i * pl.RowsPer
	rows, cols := min(pl.RowsPer, pl.M-r0), min(pl.ColsPer, pp.cols(b)-c0)
	ldn, lda, w := pl.Ld(cols), pl.Ld(pl.K), pp.words()
	ai := pp.aIndex(i, 0)
	bufA, upA := pp.bufA[ai], pp.needA(ai)
	per := rows
	if pp.rowsPer > 0 {
		per = pp.rowsPer
	}
	var steps []pipeStep
	for rb := 0; rb < rows; rb += per {
		n := min(per, rows-rb)
		s := pipeStep{
			c:      w.view(bufC, rb*ldn, ldn),
			out:    w.part(c, r0+rb, c0, n, cols),
			poison: int(w) * n * ldn,
			run:    func() error { return pp.dispatch(bufA, pp.bufB[0], bufC, 0, rb, n, cols, pl.K, ldn) },
		}
		if i == 0 && rb == 0 {
			s.up = append(s.up, upTransfer{dst: w.view(pp.bufB[0], 0, ldn), src: w.part(b, 0, c0, pl.K, cols)})
		}
		if upA {
			s.up = append(s.up, upTransfer{dst: w.view(bufA, rb*lda, lda), src: w.part(a, r0+rb, 0, n, pl.K)})
		}
		steps = append(steps, s)
	}
	return steps
}

// kStep is the step of row panel i, the column panel from c0 and K panel
// q.
func (pp *panelProduct) kStep(c, a, b blas32.General, i, c0, q int, bufC glw.Buffer) pipeStep {
	pl := pp.plan
	r0, k0 := i*pl.RowsPer, q*pl.KPer
	rows, cols, kc := min(pl.RowsPer, pl.M-r0), min(pl.ColsPer, pp.cols(b)-c0), min(pl.KPer, pl.K-k0)
	ldn, lda, w := pl.Ld(cols), pl.Ld(pl.KPer), pp.words()
	ai := pp.aIndex(i, q)
	bufA := pp.bufA[ai]
	s := pipeStep{
		c:   w.view(bufC, 0, ldn),
		run: func() error { return pp.dispatch(bufA, pp.bufB[q], bufC, q, 0, rows, cols, kc, ldn) },
	}
	if q == 0 {
		s.poison = int(w) * rows * ldn
	}
	if q == pl.KPanels()-1 {
		s.out = w.part(c, r0, c0, rows, cols)
	}
	if i == 0 {
		s.up = append(s.up, upTransfer{dst: w.view(pp.bufB[q], 0, ldn), src: w.part(b, k0, c0, kc, cols)})
	}
	if pp.needA(ai) {
		s.up = append(s.up, upTransfer{dst: w.view(bufA, 0, lda), src: w.part(a, r0, k0, rows, kc)})
	}
	return s
}

// needA reports whether A's panel buffer ai must be uploaded for the step
// being listed: always where A is streamed, once where it stays (KeepA).
func (pp *panelProduct) needA(ai int) bool {
	if !pp.plan.KeepA {
		return true
	}
	up := pp.aUp[ai]
	pp.aUp[ai] = true
	return !up
}

// aIndex is the buffer of A's panel i, K panel q: its own where A stays
// on the GPU, else one of two in turn.
func (pp *panelProduct) aIndex(i, q int) int {
	n := i*pp.plan.KPanels() + q
	if pp.plan.KeepA {
		return n
	}
	return n % 2
}

// planSplit splits K where the driver's loop budget needs it (loops.go),
// in steps of as many rows as the slices' partial results fit one
// binding (whole tiles of rows); an error matching ErrTooLarge where not
// even one tile's rows do. Their workspace is not counted against
// MaxGPUMemory.
func (pp *panelProduct) planSplit() error {
	k, pl := pp.p.kernel, pp.plan
	pp.splits, pp.ksplit = 1, pl.KPer
	need := pp.d.kSlices(k, pl.KPer)
	if pl.KPanels() > 1 {
		if need > 1 {
			panic("glcompute: K panels over the driver's loop budget") // planPanels cuts K within it
		}
		var err error
		pp.red, err = pp.d.programOf(reduceFor(pp.p.kernel)) // accumulate's
		return err
	}
	if need == 1 {
		return nil
	}
	pp.ksplit = roundUp((pl.K+need-1)/need, k.StepK)
	pp.splits = (pl.K + pp.ksplit - 1) / pp.ksplit
	binding := pp.d.info.MaxSSBOBlockSize
	if pp.o.MaxBinding > 0 {
		binding = min(binding, pp.o.MaxBinding)
	}
	row := int64(pl.Size) * int64(pp.splits) * int64(pl.Ld(pl.ColsPer)) // workspace bytes a row of C
	if rows := int(binding / row); rows < pl.RowsPer {
		if pp.rowsPer = rows / k.TileM * k.TileM; pp.rowsPer == 0 {
			return fmt.Errorf("%w: K = %d runs in %d slices on this driver (%s), whose partial results for %d rows of %d columns (%s) are over one binding (%s)",
				ErrTooLarge, pl.K, pp.splits, pp.d.loopLimit(), k.TileM, pl.ColsPer, formatBytes(float64(row)*float64(k.TileM)), formatBytes(float64(binding)))
		}
	}
	var err error
	pp.red, err = pp.d.programOf(reduceFor(pp.p.kernel))
	return err
}

// runFirst runs the first panel's product and waits for it (stages.Run
// of a product in panels): the inputs are whatever the buffers hold.
func (pp *panelProduct) runFirst() error {
	pl := pp.plan
	rows, cols := min(pl.RowsPer, pl.M), min(pl.ColsPer, pl.N)
	if err := pp.dispatch(pp.bufA[0], pp.bufB[0], pp.bufC[0], 0, 0, rows, cols, pl.KPer, pl.Ld(cols)); err != nil {
		return err
	}
	glw.Finish()
	pp.dispatches = 0 // not the pass's
	return pp.d.checkError("running the first panel")
}

// alloc creates the panel buffers, after deleting the buffers kept from
// earlier products: panels are for products that memory or bindings
// constrain (MaxGPUMemory counts only the panels).
func (pp *panelProduct) alloc() error {
	pp.d.drainPool()
	pl := pp.plan
	storage := pp.d.stage().Storage
	nA := 2
	if pl.KeepA {
		nA = pl.RowPanels() * pl.KPanels()
	}
	pp.bufA, pp.bufB = make([]glw.Buffer, nA), make([]glw.Buffer, pl.KPanels())
	bufs := []*glw.Buffer{&pp.bufC[0], &pp.bufC[1]}
	c := pl.Size * pl.CRows(pl.RowsPer) * pl.Ld(pl.ColsPer)
	sizes := []int{c, c}
	for i := range pp.bufB {
		bufs = append(bufs, &pp.bufB[i])
		sizes = append(sizes, pl.Size*pl.KPer*pl.Ld(pl.ColsPer))
	}
	for i := range pp.bufA {
		bufs = append(bufs, &pp.bufA[i])
		sizes = append(sizes, pl.Size*pl.RowsPer*pl.Ld(pl.KPer))
	}
	if pp.splits > 1 {
		rows := pl.RowsPer
		if pp.rowsPer > 0 {
			rows = pp.rowsPer
		}
		bufs = append(bufs, &pp.work)
		sizes = append(sizes, pl.Size*pp.splits*rows*pl.Ld(pl.ColsPer))
	}
	for i, b := range bufs {
		var ok bool
		if *b, ok = glw.NewDeviceBuffer(sizes[i], storage); !ok {
			return fmt.Errorf("%w: a %s panel buffer for %s", ErrOutOfMemory, formatBytes(float64(sizes[i])), pl)
		}
	}
	return nil
}

// dispatch queues the product of rows [r0, r0+rows) of a C panel for K
// panel q: those rows of A's panel (rows×kc) by B's (kc×cols), into C's
// buffer for the first K panel, else beside the sum there and then added
// to it (accumulate).
func (pp *panelProduct) dispatch(bufA, bufB, bufC glw.Buffer, q, r0, rows, cols, kc, ldn int) error {
	p, lda := pp.p, pp.plan.Ld(pp.plan.KPer)
	p.prog.Use()
	pp.d.bindStorage(p, 0, bufA, 0, 0)
	pp.d.bindStorage(p, 1, bufB, 0, 0)
	offC := r0 * ldn
	if q > 0 {
		offC = rows * ldn // the second half of C's buffer (r0 is 0)
	}
	if pp.splits > 1 {
		pp.work.BindStorage(2)
		offC = 0
	} else {
		bufC.BindStorage(2)
	}
	p.setLayout(rows, kc, cols, lda, ldn, ldn, r0*lda, 0, offC)
	if !p.kernel.Float64 { // dfast splits no K (panels64)
		p.setUints(uniform{"ksplit", pp.ksplit})
	}
	plan, err := p.plan(rows, cols, pp.o.MaxGroups)
	if err != nil {
		return err
	}
	for _, ch := range plan.Chunks {
		p.dispatchChunk(ch, pp.splits)
	}
	pp.dispatches += len(plan.Chunks)
	if pp.splits > 1 {
		pp.reduce(bufC, pp.vec4s(rows*ldn), pp.vec4s(r0*ldn))
	}
	if q > 0 {
		pp.accumulate(bufC, pp.vec4s(rows*ldn))
	}
	return nil
}

// accumulate adds the product beside the sum in C's buffer (count vec4s
// from vec4 count on) to the sum (its first count vec4s): reduce.comp over
// both as its partials, writing the first, between storage barriers.
func (pp *panelProduct) accumulate(bufC glw.Buffer, count int) {
	glw.BarrierStorage()
	r := pp.red
	r.prog.Use()
	bufC.BindStorageRange(0, 0, 2*16*int64(count)) // reduce.comp counts the partials from its length
	bufC.BindStorage(2)
	r.setUints(uniform{"count", count}, uniform{"offC4", 0})
	chunks := dispatch.Linear(count, r.kernel.Threads)
	r.dispatchLinear(chunks, 0)
	pp.dispatches += len(chunks)
	glw.BarrierStorage() // before the next K panel's product overwrites what it read
}

// reduce sums the slices' partial results in the workspace, count vec4s
// each, into bufC from vec4 offC4, between storage barriers: the kernel's
// writes before it, and the next step's kernel writing the workspace
// again after it.
func (pp *panelProduct) reduce(bufC glw.Buffer, count, offC4 int) {
	glw.BarrierStorage()
	pp.red.prog.Use()
	pp.work.BindStorageRange(0, 0, 16*int64(pp.splits)*int64(count)) // reduce.comp counts the slices from its length
	bufC.BindStorage(2)
	pp.red.setUints(uniform{"count", count}, uniform{"offC4", offC4})
	pp.red.dispatchLinear(dispatch.Linear(count, pp.red.kernel.Threads), 0)
	glw.BarrierStorage()
	pp.dispatches++
}

// release deletes the panel buffers.
func (pp *panelProduct) release() {
	for _, b := range slices.Concat([]*glw.Buffer{&pp.bufC[0], &pp.bufC[1], &pp.work}, ptrs(pp.bufB), ptrs(pp.bufA)) {
		b.Release()
	}
}

func ptrs(bs []glw.Buffer) []*glw.Buffer {
	out := make([]*glw.Buffer, len(bs))
	for i := range bs {
		out[i] = &bs[i]
	}
	return out
}

// words is the words of an element of the panels' matrices.
func (pp *panelProduct) words() words { return wordsOf(pp.plan.Size) }

// cols is the columns of m, a matrix of words, in elements of the
// panels' matrices.
func (pp *panelProduct) cols(m blas32.General) int { return m.Cols / int(pp.words()) }

// vec4s is elements of the panels' matrices in reduce.comp's 16-byte
// units (vec4s of float32, dvec2s of float64); a panel's rows are whole
// units (its Align).
func (pp *panelProduct) vec4s(elements int) int { return elements * pp.plan.Size / 16 }
