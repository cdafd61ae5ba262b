package dispatch

import (
	"fmt"

	"github.com/glmul/glmul/internal/cause"
)

// PanelPlan splits a product too large for one shader storage binding, or
// for the GPU memory it may use, into panels: C in blocks of RowsPer rows
// by ColsPer columns, each computed from a row panel of A (RowsPer×K) and a
// column panel of B (K×ColsPer). Where K is too long for one tile's panels
// to fit a binding, it is cut into K panels of KPer (KPanels): a block of
// C is the sum of the products of A's and B's K panels, each after the
// first computed beside the sum so far and added to it, C's buffer
// holding both (CRows). Rows of every panel are padded to Align elements
// on the GPU, of Size bytes each.
type PanelPlan struct {
	M, K, N          int
	Align            int
	Size             int // bytes an element: 4 (float32) or 8 (float64)
	RowsPer, ColsPer int
	KPer             int // K where K is not cut
	// KeepA: all of A's row panels stay on the GPU while the column panels
	// of B pass, so A is uploaded once; otherwise A is streamed again for
	// every column panel (out of core).
	KeepA bool
}

// RowPanels, ColPanels and KPanels are the number of panels along each
// axis.
func (p PanelPlan) RowPanels() int { return ceilDiv(p.M, p.RowsPer) }
func (p PanelPlan) ColPanels() int { return ceilDiv(p.N, p.ColsPer) }
func (p PanelPlan) KPanels() int   { return ceilDiv(p.K, p.KPer) }

// CRows is how many rows of ColsPer columns a buffer of C holds for
// rows rows of C: twice as many where K is cut, the sum so far and the
// next K panel's product.
func (p PanelPlan) CRows(rows int) int {
	if p.KPer < p.K {
		return 2 * rows
	}
	return rows
}

// Ld is the padded row length of a panel whose rows hold cols elements.
func (p PanelPlan) Ld(cols int) int { return ceilDiv(cols, p.Align) * p.Align }

// Bytes of the GPU buffers the plan keeps at once: B's column panel (its
// K panels), A (all its panels when KeepA, else two, one being filled
// while the other computes) and two C panels. The staging buffers in host
// memory are not counted.
func (p PanelPlan) Bytes() int64 {
	kp, size := int64(p.KPanels()), int64(p.Size)
	b := size * kp * int64(p.KPer) * int64(p.Ld(p.ColsPer))
	a := 2 * size * int64(p.RowsPer) * int64(p.Ld(p.KPer))
	if p.KeepA { // one buffer a panel, each RowsPer rows
		a = size * int64(p.RowPanels()*p.RowsPer) * kp * int64(p.Ld(p.KPer))
	}
	c := 2 * size * int64(p.CRows(p.RowsPer)) * int64(p.Ld(p.ColsPer))
	return a + b + c
}

func (p PanelPlan) String() string {
	keep := "A streamed per column panel"
	if p.KeepA {
		keep = "A kept on the GPU"
	}
	k := ""
	if p.KPer < p.K {
		k = fmt.Sprintf(", K in %d panels of %d summed", p.KPanels(), p.KPer)
	}
	return fmt.Sprintf("%d×%d panels of %d×%d%s (%s; %.1f MiB on the GPU)",
		p.RowPanels(), p.ColPanels(), p.RowsPer, p.ColsPer, k, keep, float64(p.Bytes())/(1<<20))
}

// Panels plans an m×k by k×n float32 product for a kernel of tileM×tileN
// work-group tiles and rows padded to align floats, with at most
// maxBinding bytes in one binding and maxMemory bytes of GPU buffers (0:
// no memory limit), K cut within maxK only where it is cut at all (the
// kernel splits a long K itself): Limits.Panels with those limits.
func Panels(m, k, n, align, tileM, tileN int, maxBinding, maxMemory int64, maxK int) (PanelPlan, error) {
	return Limits{Size: 4, Binding: maxBinding, Memory: maxMemory, MaxK: maxK}.Panels(m, k, n, align, tileM, tileN)
}

// Limits bound a panel plan: the size of an element, the bytes of one
// binding and of all the plan's buffers, and the K a dispatch may loop
// over.
type Limits struct {
	// Size is the bytes of an element: 4 (float32) or 8 (float64).
	Size int
	// Binding is the most bytes one panel's buffer may hold (a shader
	// storage binding); Memory the most the plan's buffers may take
	// together (0: no limit).
	Binding, Memory int64
	// MaxK, where positive, is the most of K one dispatch may loop over (a
	// driver's loop budget): K panels are cut within it. CutK says the
	// kernel cannot split K itself (dfast), so that a K over MaxK is cut
	// into panels even where all of it fits; otherwise (fast, cpu) only a
	// K cut for the binding is cut within MaxK.
	MaxK int
	CutK bool
}

// Panels plans an m×k by k×n product for a kernel of tileM×tileN
// work-group tiles and rows padded to align elements, within l. It cuts K
// only where one tile's panels of A and B with all of it do not fit
// (kPanels) or MaxK says (then into panels of at most MaxK), takes the
// widest column panels and then the tallest row panels that fit, in
// multiples of the tiles, and keeps A on the GPU when memory allows. It
// returns an error when not even one tile's panels fit.
func (l Limits) Panels(m, k, n, align, tileM, tileN int) (PanelPlan, error) {
	maxBinding, maxMemory, size := l.Binding, l.Memory, int64(l.Size)
	p := PanelPlan{M: m, K: k, N: n, Align: align, Size: l.Size}
	fits := func(rows, cols int) bool { return size*int64(rows)*int64(p.Ld(cols)) <= maxBinding }
	tm := min(tileM, m)
	p.KPer = p.kPanels(tm, min(tileN, n), maxBinding, fits)
	if l.MaxK > 0 && p.KPer > l.MaxK && (p.KPer < k || l.CutK) {
		p.KPer = max(align, l.MaxK/align*align)
	}
	kk := p.KPer
	// Columns: all of N, else the most tiles whose B panel, and a C panel
	// one tile high, fit a binding.
	p.ColsPer = n
	if colsFit := func(c int) bool { return fits(kk, c) && fits(p.CRows(tm), c) }; !colsFit(n) {
		p.ColsPer = int(maxBinding/(size*int64(max(kk, p.CRows(tm))))) / tileN * tileN
		for p.ColsPer > 0 && !colsFit(p.ColsPer) {
			p.ColsPer -= tileN
		}
	}
	if kk <= 0 || p.ColsPer <= 0 || !fits(tm, kk) {
		return p, cause.Mark(fmt.Errorf("dispatch: the smallest panels do not fit the %d-byte binding: a %d-column panel of B (K = %d, cut to %d) or a %d-row panel of A or C is over it", maxBinding, tileN, k, kk, tileM), cause.BindingTooSmall)
	}
	// Rows: all of M, else the most tiles whose A and C panels fit.
	p.RowsPer = m
	for p.RowsPer > tileM && !(fits(p.RowsPer, kk) && fits(p.CRows(p.RowsPer), p.ColsPer)) {
		perRow := max(p.Ld(kk), p.CRows(1)*p.Ld(p.ColsPer)) // elements a row of A's or C's panel takes
		p.RowsPer = min(p.RowsPer-1, int(maxBinding/(size*int64(perRow))))
		p.RowsPer = max(tileM, p.RowsPer/tileM*tileM)
	}
	if maxMemory <= 0 {
		p.KeepA = true
		return p, nil
	}
	if p.KeepA = true; p.Bytes() <= maxMemory {
		return p, nil
	}
	p.KeepA = false
	// Shrink the panels until two of A and C and one of B fit.
	for p.Bytes() > maxMemory {
		switch {
		case p.RowsPer > tileM:
			p.RowsPer = max(tileM, p.RowsPer/2/tileM*tileM)
		case p.ColsPer > tileN:
			p.ColsPer = max(tileN, p.ColsPer/2/tileN*tileN)
		default:
			return p, cause.Mark(fmt.Errorf("dispatch: one tile's panels need %d bytes, over the %d bytes of GPU memory allowed", p.Bytes(), maxMemory), cause.GPUMemoryCap)
		}
	}
	return p, nil
}

// kPanels is the columns of A of a K panel: all of K where panels of tm
// rows of A and tn columns of B with all of it fit (fits, maxBinding),
// else the most, a multiple of Align and, from 64 on, of 64, with which
// they do; 0 where none does.
func (p PanelPlan) kPanels(tm, tn int, maxBinding int64, fits func(rows, cols int) bool) int {
	if fits(tm, p.K) && fits(p.K, tn) {
		return p.K
	}
	kk := int(min(int64(p.K-1), maxBinding/(int64(p.Size)*int64(max(tm, p.Ld(tn))))))
	unit := p.Align
	if kk >= 64 && 64%p.Align == 0 {
		unit = 64
	}
	kk = kk / unit * unit
	for kk > 0 && !(fits(tm, kk) && fits(kk, tn)) {
		kk -= unit
	}
	return kk
}
