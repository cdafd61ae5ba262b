package matfile

import "slices"

// spans is a set of rows: sorted, disjoint intervals [lo, hi), none
// empty, none touching the next.
type spans []span

// span is rows [lo, hi); in says, of a piece split returns, whether the
// set holds it.
type span struct {
	lo, hi int
	in     bool
}

// split returns [lo, hi) cut where it enters or leaves the set, in
// order, each piece marked with whether the set holds it.
func (s spans) split(lo, hi int) []span {
	var out []span
	at := lo
	for _, sp := range s {
		if sp.hi <= at {
			continue
		}
		if sp.lo >= hi {
			break
		}
		if sp.lo > at {
			out = append(out, span{lo: at, hi: sp.lo})
			at = sp.lo
		}
		end := min(sp.hi, hi)
		out = append(out, span{lo: at, hi: end, in: true})
		at = end
	}
	if at < hi {
		out = append(out, span{lo: at, hi: hi})
	}
	return out
}

// add adds [lo, hi) to the set.
func (s *spans) add(lo, hi int) {
	t := append(*s, span{lo: lo, hi: hi})
	slices.SortFunc(t, func(a, b span) int { return a.lo - b.lo })
	out := t[:1]
	for _, sp := range t[1:] {
		if last := &out[len(out)-1]; sp.lo <= last.hi {
			last.hi = max(last.hi, sp.hi)
		} else {
			out = append(out, sp)
		}
	}
	*s = out
}
