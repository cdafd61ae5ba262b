package dispatch

import (
	"fmt"
	"testing"
)

// TestPanelsFitAndCover checks, over shapes and limits, that every panel
// fits the binding limit, the buffers fit the memory limit, the panels are
// whole tiles (but for the last) and cover the product.
func TestPanelsFitAndCover(t *testing.T) {
	for _, s := range [][3]int{{100, 77, 130}, {4096, 4096, 4096}, {1, 5000, 1}, {513, 3, 1025}, {32768, 32768, 32768}} {
		for _, lim := range [][2]int64{{1 << 31, 0}, {64 << 10, 0}, {64 << 10, 512 << 10}, {1 << 20, 8 << 20}, {1 << 31, 2 << 30}} {
			m, k, n := s[0], s[1], s[2]
			name := fmt.Sprintf("%dx%dx%d/binding=%d/mem=%d", m, k, n, lim[0], lim[1])
			p, err := Panels(m, k, n, 4, 64, 64, lim[0], lim[1])
			if err != nil {
				if 4*int64(k)*64 <= lim[0] && lim[1] == 0 {
					t.Errorf("%s: %v", name, err)
				}
				continue
			}
			if p.RowsPer < 1 || p.ColsPer < 1 || p.RowsPer > m || p.ColsPer > n {
				t.Fatalf("%s: %v", name, p)
			}
			if (p.RowsPer < m && p.RowsPer%64 != 0) || (p.ColsPer < n && p.ColsPer%64 != 0) {
				t.Errorf("%s: panels not whole tiles: %v", name, p)
			}
			for _, b := range []int64{4 * int64(k) * int64(p.Ld(p.ColsPer)), 4 * int64(p.RowsPer) * int64(p.Ld(k)), 4 * int64(p.RowsPer) * int64(p.Ld(p.ColsPer))} {
				if b > lim[0] {
					t.Errorf("%s: a panel of %d bytes is over the binding: %v", name, b, p)
				}
			}
			if lim[1] > 0 && p.Bytes() > lim[1] {
				t.Errorf("%s: %d bytes over the memory limit: %v", name, p.Bytes(), p)
			}
			if p.RowPanels()*p.RowsPer < m || p.ColPanels()*p.ColsPer < n {
				t.Errorf("%s: the panels do not cover the product: %v", name, p)
			}
			if lim[0] == 1<<31 && lim[1] == 0 && int64(m)*int64(k)*4 < 1<<31 && int64(k)*int64(n)*4 < 1<<31 && int64(m)*int64(n)*4 < 1<<31 && (p.RowPanels() != 1 || p.ColPanels() != 1) {
				t.Errorf("%s: a product that fits is split: %v", name, p)
			}
		}
	}
	// The reviewer's case: A kept, its last row panel partial.
	if p, err := Panels(257, 33, 700, 4, 64, 64, 64<<10, 200<<10); err != nil || p.Bytes() > 200<<10 {
		t.Errorf("257x33x700 under 200 KiB: %v, %v (%d bytes)", p, err, p.Bytes())
	}
	if _, err := Panels(10, 1<<20, 10, 4, 64, 64, 64<<10, 0); err == nil {
		t.Error("a K too long for one tile's panel was planned")
	}
}
