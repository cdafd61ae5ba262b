package dispatch

import (
	"fmt"
	"testing"
)

// TestPlanCoversEachGroupOnce checks, for shapes on both sides of every tile
// and chunk boundary, that the chunks tile the group grid exactly: every
// group is dispatched once, none twice, none out of range.
func TestPlanCoversEachGroupOnce(t *testing.T) {
	const tile = 32
	sizes := []int{1, 31, 32, 33, 64, 65, 2047, 2048, 2049, 4096, 4097}
	for _, maxGroups := range []int{1, 3, 64, 0} {
		for _, m := range sizes {
			for _, n := range sizes {
				t.Run(fmt.Sprintf("cap=%d/%dx%d", maxGroups, m, n), func(t *testing.T) {
					p, err := New(m, n, tile, tile, maxGroups)
					if err != nil {
						t.Fatal(err)
					}
					capGroups := maxGroups
					if capGroups == 0 {
						capGroups = DefaultMaxGroups
					}
					wantX, wantY := (n+tile-1)/tile, (m+tile-1)/tile
					if p.GroupsX != wantX || p.GroupsY != wantY {
						t.Fatalf("groups %d×%d, want %d×%d", p.GroupsX, p.GroupsY, wantX, wantY)
					}
					seen := make([]int, wantX*wantY)
					for _, c := range p.Chunks {
						if c.GroupsX < 1 || c.GroupsY < 1 || c.GroupsX > capGroups || c.GroupsY > capGroups {
							t.Fatalf("chunk %+v outside 1..%d groups", c, capGroups)
						}
						if c.X0%tile != 0 || c.Y0%tile != 0 {
							t.Fatalf("chunk %+v not on a tile boundary", c)
						}
						for y := c.Y0 / tile; y < c.Y0/tile+c.GroupsY; y++ {
							for x := c.X0 / tile; x < c.X0/tile+c.GroupsX; x++ {
								if x >= wantX || y >= wantY {
									t.Fatalf("chunk %+v reaches group (%d,%d) beyond %d×%d", c, x, y, wantX, wantY)
								}
								seen[y*wantX+x]++
							}
						}
					}
					for i, s := range seen {
						if s != 1 {
							t.Fatalf("group (%d,%d) dispatched %d times", i%wantX, i/wantX, s)
						}
					}
					wantChunks := ((wantX + capGroups - 1) / capGroups) * ((wantY + capGroups - 1) / capGroups)
					if len(p.Chunks) != wantChunks {
						t.Fatalf("%d chunks, want %d", len(p.Chunks), wantChunks)
					}
				})
			}
		}
	}
}

func TestPlanPaperExample(t *testing.T) {
	// n = 4096 with the paper's 64×64 cap: 128×128 groups in four chunks.
	p, err := New(4096, 4096, 32, 32, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{{0, 0, 64, 64}, {2048, 0, 64, 64}, {0, 2048, 64, 64}, {2048, 2048, 64, 64}}
	if fmt.Sprint(p.Chunks) != fmt.Sprint(want) {
		t.Fatalf("chunks = %v, want %v", p.Chunks, want)
	}
}

func TestPlanRejectsEmpty(t *testing.T) {
	for _, c := range [][4]int{{0, 5, 32, 32}, {5, 0, 32, 32}, {5, 5, 0, 32}} {
		if _, err := New(c[0], c[1], c[2], c[3], 64); err == nil {
			t.Errorf("New%v: no error", c)
		}
	}
}

// TestLinearCoversEveryItemOnce checks that the groups of a linear plan,
// numbered row-major within each chunk, cover items 0…n−1 with no gap or
// overlap, and that no chunk exceeds the caps.
func TestLinearCoversEveryItemOnce(t *testing.T) {
	per := 256
	cap := MaxLinearX * MaxLinearY
	for _, groups := range []int{1, 2, MaxLinearX - 1, MaxLinearX, MaxLinearX + 1, cap - 1, cap, cap + 1, 2*cap + 3} {
		for _, short := range []int{0, 1, per - 1} {
			n := groups*per - short
			if n < 1 {
				continue
			}
			chunks := Linear(n, per)
			next := 0
			for _, c := range chunks {
				if c.GroupsX > MaxLinearX || c.GroupsY > MaxLinearY || c.GroupsX < 1 || c.GroupsY < 1 {
					t.Fatalf("n=%d: chunk %+v over the caps", n, c)
				}
				if c.First != next {
					t.Fatalf("n=%d: chunk starts at %d, want %d", n, c.First, next)
				}
				// A chunk's groups run to GroupsX·GroupsY; the last chunk's
				// extra groups (of a partial last row) fall past n and
				// must be idled by the shader's bounds check.
				next += c.GroupsX * c.GroupsY * per
				if next < n && c.GroupsX*c.GroupsY != cap {
					t.Fatalf("n=%d: a chunk before the last is not full: %+v", n, c)
				}
			}
			if next < n || next-n >= MaxLinearX*per {
				t.Fatalf("n=%d: plan covers %d items", n, next)
			}
		}
	}
}

// TestEdgesCoverEachElementOnce: the interior's tiles and the strips'
// tiles, clipped to C, cover every element of C once; the interior's are
// whole tiles inside C; and there is no split without both an interior and
// an edge.
func TestEdgesCoverEachElementOnce(t *testing.T) {
	const tm, tn, em, en = 8, 16, 4, 4
	for _, maxGroups := range []int{1, 2, 0} {
		for _, m := range []int{1, 7, 8, 9, 17, 23} {
			for _, n := range []int{1, 15, 16, 17, 33, 45} {
				interior, edges, ok := Edges(m, n, tm, tn, em, en, maxGroups)
				mI, nI := m/tm*tm, n/tn*tn
				if _, _, odd := Edges(m, n, tm, tn, 3, en, maxGroups); odd {
					t.Fatalf("%dx%d: edge tiles of 3 rows accepted for tiles of %d", m, n, tm)
				}
				if want := mI > 0 && nI > 0 && (mI < m || nI < n); ok != want {
					t.Fatalf("%dx%d: ok %v, want %v", m, n, ok, want)
				}
				if !ok {
					continue
				}
				seen := make([]int, m*n)
				cover := func(c Chunk, th, tw int, whole bool) {
					for y := c.Y0; y < c.Y0+c.GroupsY*th; y++ {
						for x := c.X0; x < c.X0+c.GroupsX*tw; x++ {
							if y < m && x < n {
								seen[y*n+x]++
							} else if whole {
								t.Fatalf("%dx%d cap %d: interior chunk %+v reaches (%d,%d) outside C", m, n, maxGroups, c, y, x)
							}
						}
					}
				}
				for _, c := range interior.Chunks {
					cover(c, tm, tn, true)
				}
				for _, c := range edges {
					if c.X0%4 != 0 {
						t.Fatalf("%dx%d: edge chunk %+v starts off a vec4", m, n, c)
					}
					cover(c, em, en, false)
				}
				for i, s := range seen {
					if s != 1 {
						t.Fatalf("%dx%d cap %d: element (%d,%d) covered %d times", m, n, maxGroups, i/n, i%n, s)
					}
				}
			}
		}
	}
}
