package dispatch

import "fmt"

// PanelPlan splits a product too large for one shader storage binding, or
// for the GPU memory it may use, into panels: C in blocks of RowsPer rows
// by ColsPer columns, each computed from a row panel of A (RowsPer×K) and a
// column panel of B (K×ColsPer). Rows of every panel are padded to Align
// floats on the GPU.
type PanelPlan struct {
	M, K, N          int
	Align            int
	RowsPer, ColsPer int
	// KeepA: all of A's row panels stay on the GPU while the column panels
	// of B pass, so A is uploaded once; otherwise A is streamed again for
	// every column panel (out of core).
	KeepA bool
}

// RowPanels and ColPanels are the number of panels along each axis.
func (p PanelPlan) RowPanels() int { return ceilDiv(p.M, p.RowsPer) }
func (p PanelPlan) ColPanels() int { return ceilDiv(p.N, p.ColsPer) }

// Ld is the padded row length of a panel whose rows hold cols floats.
func (p PanelPlan) Ld(cols int) int { return ceilDiv(cols, p.Align) * p.Align }

// Bytes of the GPU buffers the plan keeps at once: B's column panel, A
// (all its row panels when KeepA, else two, one being filled while the
// other computes) and two C panels. The staging buffers in host memory
// are not counted.
func (p PanelPlan) Bytes() int64 {
	b := 4 * int64(p.K) * int64(p.Ld(p.ColsPer))
	a := 2 * 4 * int64(p.RowsPer) * int64(p.Ld(p.K))
	if p.KeepA { // one buffer a row panel, each RowsPer rows
		a = 4 * int64(p.RowPanels()*p.RowsPer) * int64(p.Ld(p.K))
	}
	c := 2 * 4 * int64(p.RowsPer) * int64(p.Ld(p.ColsPer))
	return a + b + c
}

func (p PanelPlan) String() string {
	keep := "A streamed per column panel"
	if p.KeepA {
		keep = "A kept on the GPU"
	}
	return fmt.Sprintf("%d×%d panels of %d×%d (%s; %.1f MiB on the GPU)",
		p.RowPanels(), p.ColPanels(), p.RowsPer, p.ColsPer, keep, float64(p.Bytes())/(1<<20))
}

// Panels plans an m×k by k×n product for a kernel of tileM×tileN work-group
// tiles and rows padded to align floats, with at most maxBinding bytes in
// one binding and maxMemory bytes of GPU buffers (0: no memory limit). It
// takes the widest column panels and then the tallest row panels that fit,
// in multiples of the tiles, and keeps A on the GPU when memory allows. It
// returns an error when not even one tile's panels fit.
func Panels(m, k, n, align, tileM, tileN int, maxBinding, maxMemory int64) (PanelPlan, error) {
	p := PanelPlan{M: m, K: k, N: n, Align: align}
	fits := func(rows, cols int) bool { return 4*int64(rows)*int64(p.Ld(cols)) <= maxBinding }
	// Columns: all of N, else the most tiles whose B panel, and a C panel
	// one tile high, fit a binding.
	p.ColsPer = n
	if colsFit := func(c int) bool { return fits(k, c) && fits(min(tileM, m), c) }; !colsFit(n) {
		p.ColsPer = int(maxBinding/(4*int64(max(k, min(tileM, m))))) / tileN * tileN
		for p.ColsPer > 0 && !colsFit(p.ColsPer) {
			p.ColsPer -= tileN
		}
	}
	if p.ColsPer <= 0 || !fits(min(tileM, m), k) {
		return p, fmt.Errorf("dispatch: the smallest panels do not fit the %d-byte binding: a %d-column panel of B (K = %d) or a %d-row panel of A or C is over it", maxBinding, tileN, k, tileM)
	}
	// Rows: all of M, else the most tiles whose A and C panels fit.
	p.RowsPer = m
	for p.RowsPer > tileM && !(fits(p.RowsPer, k) && fits(p.RowsPer, p.ColsPer)) {
		p.RowsPer = min(p.RowsPer-1, int(maxBinding/(4*int64(p.Ld(max(k, p.ColsPer))))))
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
			return p, fmt.Errorf("dispatch: one tile's panels need %d bytes, over the %d bytes of GPU memory allowed", p.Bytes(), maxMemory)
		}
	}
	return p, nil
}
