package dispatch

import (
	"fmt"
	"testing"
)

// TestPanelsFitAndCover checks, over shapes and limits, that every panel
// fits the binding limit, the buffers fit the memory limit, the panels are
// whole tiles (but for the last) and cover the product, K cut only where
// one tile's panels do not fit with all of it.
func TestPanelsFitAndCover(t *testing.T) {
	for _, s := range [][3]int{{100, 77, 130}, {4096, 4096, 4096}, {1, 5000, 1}, {513, 3, 1025}, {32768, 32768, 32768}, {3, 8388608, 5}, {70, 100000, 300}} {
		for _, lim := range [][2]int64{{1 << 31, 0}, {64 << 10, 0}, {64 << 10, 512 << 10}, {1 << 20, 8 << 20}, {1 << 31, 2 << 30}} {
			m, k, n := s[0], s[1], s[2]
			name := fmt.Sprintf("%dx%dx%d/binding=%d/mem=%d", m, k, n, lim[0], lim[1])
			p, err := Panels(m, k, n, 4, 64, 64, lim[0], lim[1], 0)
			if err != nil {
				if lim[1] == 0 {
					t.Errorf("%s: %v", name, err)
				}
				continue
			}
			if p.RowsPer < 1 || p.ColsPer < 1 || p.KPer < 1 || p.RowsPer > m || p.ColsPer > n || p.KPer > k {
				t.Fatalf("%s: %v", name, p)
			}
			if (p.RowsPer < m && p.RowsPer%64 != 0) || (p.ColsPer < n && p.ColsPer%64 != 0) || (p.KPer < k && p.KPer%4 != 0) {
				t.Errorf("%s: panels not whole tiles: %v", name, p)
			}
			if tile := (PanelPlan{K: k, Align: 4}); p.KPer < k && 4*int64(min(64, m))*int64(k) <= lim[0] && 4*int64(k)*int64(tile.Ld(min(64, n))) <= lim[0] {
				t.Errorf("%s: K cut though one tile's panels fit: %v", name, p)
			}
			for _, b := range []int64{4 * int64(p.KPer) * int64(p.Ld(p.ColsPer)), 4 * int64(p.RowsPer) * int64(p.Ld(p.KPer)), 4 * int64(p.CRows(p.RowsPer)) * int64(p.Ld(p.ColsPer))} {
				if b > lim[0] {
					t.Errorf("%s: a panel of %d bytes is over the binding: %v", name, b, p)
				}
			}
			if lim[1] > 0 && p.Bytes() > lim[1] {
				t.Errorf("%s: %d bytes over the memory limit: %v", name, p.Bytes(), p)
			}
			if p.RowPanels()*p.RowsPer < m || p.ColPanels()*p.ColsPer < n || p.KPanels()*p.KPer < k {
				t.Errorf("%s: the panels do not cover the product: %v", name, p)
			}
			if lim[0] == 1<<31 && lim[1] == 0 && int64(m)*int64(k)*4 < 1<<31 && int64(k)*int64(n)*4 < 1<<31 && int64(m)*int64(n)*4 < 1<<31 && (p.RowPanels() != 1 || p.ColPanels() != 1) {
				t.Errorf("%s: a product that fits is split: %v", name, p)
			}
		}
	}
	// The reviewer's case: A kept, its last row panel partial.
	if p, err := Panels(257, 33, 700, 4, 64, 64, 64<<10, 200<<10, 0); err != nil || p.Bytes() > 200<<10 {
		t.Errorf("257x33x700 under 200 KiB: %v, %v (%d bytes)", p, err, p.Bytes())
	}
	// K too long for one tile's panels (it was refused): cut, C's buffer
	// doubled; and a binding too small for even one vec4 of K refused.
	if p, err := Panels(10, 1<<20, 10, 4, 64, 64, 64<<10, 0, 0); err != nil || p.KPer != 1344 || p.KPanels() != 781 || p.CRows(10) != 20 {
		t.Errorf("10×1048576×10 under 64 KiB a binding: %v, %v", p, err)
	}
	// A driver's loop budget caps a cut K's panels, and only a cut one's.
	if p, err := Panels(10, 1<<20, 10, 4, 64, 64, 64<<10, 0, 1000); err != nil || p.KPer != 1000 {
		t.Errorf("10×1048576×10 under 64 KiB, K at most 1000 a panel: %v, %v", p, err)
	}
	if p, err := Panels(10, 5000, 1000, 4, 64, 64, 1<<30, 0, 1000); err != nil || p.KPer != 5000 {
		t.Errorf("10×5000×1000 under 1 GiB, K at most 1000 a panel: %v, %v", p, err)
	}
	if _, err := Panels(10, 1<<20, 10, 4, 64, 64, 100, 0, 0); err == nil {
		t.Error("a binding of 100 bytes was planned")
	}
}

// TestPanelsFloat64: a plan of 8-byte elements is the float32 plan of a
// binding and memory half as large (the same panels, bytes doubled), and
// a kernel that cannot split K (CutK) has any K over MaxK cut, where a
// float32 kernel's is cut only where the binding needs it.
func TestPanelsFloat64(t *testing.T) {
	for _, s := range [][3]int{{100, 77, 130}, {4096, 4096, 4096}, {1, 5000, 1}, {513, 3, 1025}, {3, 8388608, 5}, {70, 100000, 300}} {
		for _, lim := range [][2]int64{{1 << 31, 0}, {64 << 10, 0}, {64 << 10, 512 << 10}, {1 << 20, 8 << 20}} {
			m, k, n := s[0], s[1], s[2]
			p64, err64 := Limits{Size: 8, Binding: lim[0], Memory: lim[1]}.Panels(m, k, n, 2, 64, 64)
			p32, err32 := Limits{Size: 4, Binding: lim[0] / 2, Memory: lim[1] / 2}.Panels(m, k, n, 2, 64, 64)
			if (err64 == nil) != (err32 == nil) {
				t.Errorf("%v %v: float64 %v, float32 at half the limits %v", s, lim, err64, err32)
				continue
			}
			if p32.Size = 8; err64 == nil && p64 != p32 {
				t.Errorf("%v %v: float64 plan %+v, want the float32 plan at half the limits %+v", s, lim, p64, p32)
			}
			if p32.Size = 4; err64 == nil && (p64.Bytes() != 2*p32.Bytes() || lim[1] > 0 && p64.Bytes() > lim[1]) {
				t.Errorf("%v %v: %d bytes for %+v", s, lim, p64.Bytes(), p64)
			}
		}
	}
	cut := Limits{Size: 8, Binding: 1 << 30, MaxK: 1000, CutK: true}
	if p, err := cut.Panels(10, 5000, 1000, 2, 64, 64); err != nil || p.KPer != 1000 || p.KPanels() != 5 || p.CRows(10) != 20 {
		t.Errorf("10×5000×1000, CutK at 1000: %v, %v", p, err)
	}
	if p, err := cut.Panels(10, 1000, 1000, 2, 64, 64); err != nil || p.KPer != 1000 {
		t.Errorf("10×1000×1000, CutK at 1000: %v, %v", p, err)
	}
}
