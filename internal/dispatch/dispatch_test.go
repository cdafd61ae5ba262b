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
