package sweep

import "slices"

// Candidate is one kernel configuration's outcome in a sweep.
type Candidate struct {
	Kernel string  `json:"kernel"`
	GFLOPS float64 `json:"gflops"` // the best median rate measured
	Valid  bool    `json:"valid"`  // every product it made validated
	Error  string  `json:"error,omitempty"`
}

// Sweep parameters glmul tune uses: one pass over every candidate ranks
// them noisily (GPU clocks drift over a sweep of minutes), so the
// Finalists leaders are measured Rounds more times.
const (
	Finalists = 8
	Rounds    = 4
)

// Sweep measures every spec once with measure (calling progress, if set,
// with the index and outcome of each), ranks them, then measures the finalists
// leaders rounds more times, round-robin so that drift hits them alike;
// each keeps its best rate, and one that fails validation in a later round
// is ranked with the invalid. The keep specs (the built-in choice, which a
// tuned winner must beat) are measured with the finalists however the first
// pass ranked them, and first added to specs if missing. It returns the
// candidates ranked: valid before invalid, fastest first.
func Sweep(specs []string, measure func(spec string) Candidate, finalists, rounds int, progress func(i int, c Candidate), keep ...string) []Candidate {
	for _, k := range keep {
		if !slices.Contains(specs, k) {
			specs = append(slices.Clip(specs), k)
		}
	}
	cands := make([]Candidate, len(specs))
	for i, spec := range specs {
		cands[i] = measure(spec)
		if progress != nil {
			progress(i, cands[i])
		}
	}
	Rank(cands)
	top := min(finalists, len(cands))
	for round := 0; round < rounds; round++ {
		for i := range cands {
			if !cands[i].Valid || i >= top && !slices.Contains(keep, cands[i].Kernel) {
				continue
			}
			switch r := measure(cands[i].Kernel); {
			case !r.Valid:
				cands[i] = r
			case r.GFLOPS > cands[i].GFLOPS:
				cands[i].GFLOPS = r.GFLOPS
			}
		}
	}
	Rank(cands)
	return cands
}

// Rank orders candidates valid first, fastest first, keeping the order of
// equals.
func Rank(cs []Candidate) {
	slices.SortStableFunc(cs, func(x, y Candidate) int {
		switch {
		case x.Valid != y.Valid:
			if x.Valid {
				return -1
			}
			return 1
		case x.GFLOPS > y.GFLOPS:
			return -1
		case x.GFLOPS < y.GFLOPS:
			return 1
		}
		return 0
	})
}
