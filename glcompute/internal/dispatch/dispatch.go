// Package dispatch plans how a matrix product's result grid is split into
// compute dispatches: the paper's Algorithm 1 loop over submatrices (x0, y0),
// each at most MaxGroups×MaxGroups work groups so that no single dispatch runs
// long enough to trip a driver watchdog (Windows' TDR).
//
// It is pure Go and never touches GL.
package dispatch

import "fmt"

// DefaultMaxGroups is the paper's cap: 64×64 work groups per dispatch.
const DefaultMaxGroups = 64

// Chunk is one dispatch: GroupsX×GroupsY work groups covering the result
// columns starting at X0 and rows starting at Y0.
type Chunk struct {
	X0, Y0           int // first column and row of C, in elements
	GroupsX, GroupsY int // work groups along columns (x) and rows (y)
}

// Plan is the list of dispatches for one product, row-major over chunks.
type Plan struct {
	Chunks []Chunk
	// GroupsX and GroupsY are the work groups needed along each axis in all.
	GroupsX, GroupsY int
}

// New plans an m×n result (m rows, n columns) computed by work groups that
// each cover tileM rows and tileN columns, with at most maxGroups groups per
// axis per dispatch. maxGroups ≤ 0 means DefaultMaxGroups.
//
// Edge chunks dispatch only the groups they need (the paper dispatched a
// full 64×64 every time and let the bounds checks idle the rest).
func New(m, n, tileM, tileN, maxGroups int) (Plan, error) {
	if m <= 0 || n <= 0 {
		return Plan{}, fmt.Errorf("dispatch: empty result %d×%d", m, n)
	}
	if tileM <= 0 || tileN <= 0 {
		return Plan{}, fmt.Errorf("dispatch: bad tile %d×%d", tileM, tileN)
	}
	if maxGroups <= 0 {
		maxGroups = DefaultMaxGroups
	}
	p := Plan{
		GroupsX: ceilDiv(n, tileN),
		GroupsY: ceilDiv(m, tileM),
	}
	for gy := 0; gy < p.GroupsY; gy += maxGroups {
		for gx := 0; gx < p.GroupsX; gx += maxGroups {
			p.Chunks = append(p.Chunks, Chunk{
				X0:      gx * tileN,
				Y0:      gy * tileM,
				GroupsX: min(maxGroups, p.GroupsX-gx),
				GroupsY: min(maxGroups, p.GroupsY-gy),
			})
		}
	}
	return p, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Linear caps of a one-dimensional plan: at most MaxLinearX×MaxLinearY
// work groups per dispatch (65535 is the least GL guarantees along x; 64
// rows keep a dispatch short, as DefaultMaxGroups does for products).
const (
	MaxLinearX = 65535
	MaxLinearY = 64
)

// LinearChunk is one dispatch of a one-dimensional plan: GroupsX×GroupsY
// work groups covering items First onward, the groups numbered row-major.
type LinearChunk struct {
	First            int
	GroupsX, GroupsY int
}

// Linear plans n items processed perGroup to a work group (the last group
// partly idle) as dispatches of at most MaxLinearX×MaxLinearY groups. It
// panics if n or perGroup is below 1.
func Linear(n, perGroup int) []LinearChunk {
	if n < 1 || perGroup < 1 {
		panic("dispatch: Linear needs n ≥ 1 and perGroup ≥ 1")
	}
	groups := ceilDiv(n, perGroup)
	var out []LinearChunk
	for first := 0; first < groups; first += MaxLinearX * MaxLinearY {
		g := min(groups-first, MaxLinearX*MaxLinearY)
		gx := min(g, MaxLinearX)
		out = append(out, LinearChunk{First: first * perGroup, GroupsX: gx, GroupsY: ceilDiv(g, gx)})
	}
	return out
}

// Edges splits an m×n result into its interior, the rows and columns that
// whole tileM×tileN tiles cover (planned as New plans it), and the strips
// past it: the last m mod tileM rows across all n columns, and the last n
// mod tileN columns of the interior's rows, planned in edgeM×edgeN tiles.
// A kernel with large tiles then computes no tile that is mostly outside
// the result, and a smaller kernel the edges. ok is false when there is
// no interior or no edge, or when the edge tiles do not divide the large
// ones (a strip's tiles would then reach into the other strip).
func Edges(m, n, tileM, tileN, edgeM, edgeN, maxGroups int) (interior Plan, edges []Chunk, ok bool) {
	mI, nI := m/tileM*tileM, n/tileN*tileN
	if mI == 0 || nI == 0 || (mI == m && nI == n) || edgeM <= 0 || edgeN <= 0 || tileM%edgeM != 0 || tileN%edgeN != 0 {
		return Plan{}, nil, false
	}
	interior, err := New(mI, nI, tileM, tileN, maxGroups)
	if err != nil {
		return Plan{}, nil, false
	}
	strip := func(rows, cols, y0, x0 int) {
		if rows == 0 || cols == 0 {
			return
		}
		p, _ := New(rows, cols, edgeM, edgeN, maxGroups)
		for _, c := range p.Chunks {
			c.X0 += x0
			c.Y0 += y0
			edges = append(edges, c)
		}
	}
	strip(m-mI, n, mI, 0)
	strip(mI, n-nI, 0, nI)
	return interior, edges, true
}
