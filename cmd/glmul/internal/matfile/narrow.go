package matfile

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ReadOptions are ReadWith's options. The zero value refuses float64
// values beyond float32's range.
type ReadOptions struct {
	// AllowOverflow lets a float64 value beyond float32's range (a
	// magnitude above math.MaxFloat32 ≈ 3.4e38 once rounded) become ±Inf,
	// as a float32 BLAS would see it; ReadInfo.Overflows counts them.
	// Zero value: such a value is an error (ErrOverflow) naming the first
	// one's place and value.
	AllowOverflow bool
}

// ReadInfo says what reading a file changed in its values, for the caller
// to tell the user; none of it is an error.
type ReadInfo struct {
	// Overflows counts the float64 values beyond float32's range that
	// became ±Inf (only with ReadOptions.AllowOverflow). NaN and ±Inf in
	// the file are data, kept and not counted.
	Overflows int
	// Underflows counts the nonzero values that became 0: smaller in
	// magnitude than float32's smallest subnormal (≈1.4e-45).
	Underflows int
	// Duplicates counts a coordinate .mtx file's entries at a position an
	// earlier entry set (in a symmetric file, (j, i) after (i, j) too):
	// they are summed into it, MatrixMarket's convention.
	Duplicates int
}

// ErrOverflow is the error for a float64 value beyond float32's range
// (without ReadOptions.AllowOverflow); match it with errors.Is.
var ErrOverflow = errors.New("beyond float32's range")

// narrowing rounds float64 values to float32 and counts what that loses:
// values beyond float32's range (±Inf in float32) and nonzero ones below
// its smallest subnormal (0 in float32). NaN and ±Inf stay what they are.
type narrowing struct {
	overflows, underflows int
	// where names the first overflow's place and value ("a.npy: element
	// [2, 0] is 1e+39"), set by the caller when round reports it.
	where string
	inf   float32 // what it became
	// scope says where the values were counted, for check's message:
	// "" for the whole file, "in rows 5 to 9" for a block of it.
	scope string
}

// round returns v in float32; first reports the first overflow, whose
// place the caller then writes into where.
func (n *narrowing) round(v float64) (f float32, first bool) {
	f = float32(v)
	switch {
	case math.IsInf(float64(f), 0) && !math.IsInf(v, 0):
		n.overflows++
		if n.overflows == 1 {
			n.inf = f
			return f, true
		}
	case f == 0 && v != 0:
		n.underflows++
	}
	return f, false
}

// check returns the error for the values beyond float32's range, unless o
// allows them.
func (n *narrowing) check(o ReadOptions) error {
	if n.overflows == 0 || o.AllowOverflow {
		return nil
	}
	more := ""
	if n.overflows > 1 {
		scope := n.scope
		if scope == "" {
			scope = "in the file"
		}
		more = fmt.Sprintf(" (%d such values %s)", n.overflows, scope)
	}
	return fmt.Errorf("%s, %w (largest magnitude %s): it would become %v in float32%s",
		n.where, ErrOverflow, strconv.FormatFloat(math.MaxFloat32, 'g', -1, 32), n.inf, more)
}

// info returns the counts as a ReadInfo.
func (n *narrowing) info() ReadInfo {
	return ReadInfo{Overflows: n.overflows, Underflows: n.underflows}
}

// merge adds b's counts to n's; b's first overflow becomes n's if n has
// none.
func (n *narrowing) merge(b narrowing) {
	if n.overflows == 0 && b.overflows > 0 {
		n.where, n.inf = b.where, b.inf
	}
	n.overflows += b.overflows
	n.underflows += b.underflows
}
