// Package validate checks a float32 matrix product against float64
// arithmetic, with tolerances derived from what float32 summation does,
// never from a constant tuned until green. docs/VALIDATION.md derives them
// and gives their measurements.
//
// # The tolerance
//
// An element cᵢⱼ = Σₖ aᵢₖbₖⱼ summed in float32 in any order whose partial
// sums each cover a contiguous range of k (in order, in tiles, split along
// K, stream-K, pairwise: every kernel glmul ships) has the rounding error
// Σ δ·s over its partial sums s and terms, each |δ| ≤ u = 2⁻²⁴. Each such
// s is a difference of two prefix sums Sₖ = Σ_{l≤k} aᵢₗbₗⱼ, so |s| ≤ 2P
// with P = maxₖ |Sₖ|, which the float64 reference gathers as it sums.
// Treating the δ as independent with mean zero (the model of Higham and
// Mary, SIAM J. Sci. Comput. 41(5), 2019), Hoeffding's inequality gives
//
//	|ĉᵢⱼ − cᵢⱼ| ≤ λ·u·√(8K)·P    with probability ≥ 1 − 2·exp(−λ²/2)
//
// and Lambda = 9 makes a false alarm on a correct product of 2³⁸ elements
// less likely than 2·10⁻⁶. It grows like K where the data cancel (P ≈ √K
// terms), where the worst-case bound γ_K·Σ|aᵢₖ||bₖⱼ| (Higham, §3.1) grows
// like K² and certified anything at K = 2²⁰: a 1% error now fails from
// K = 1 to 2²⁴. The tolerance is the smaller of the two (both hold), plus
// the float64 reference's own γ_K(2⁻⁵³)·Σ|a||b| and 2K·2⁻¹²⁶ for results
// that a GPU flushes to zero below float32's smallest normal.
//
// The model fails where rounding errors share a sign: long sums of terms of
// one sign, whose partial sums reach about 2²² times a term, drift
// (K = 2²⁴ of uniform [0, 1) data summed in order loses 2%). float32 is
// then really that far from the product, and the check says so.
//
// # Modes
//
// Full computes every element in float64 with its P (a pass of O(MNK)) and
// checks it against its tolerance. Freivalds checks C·x against A·(B·x) in
// float64 for a few random vectors x, O(MN + MK + KN) each: the
// tolerance of (Ĉx)ᵢ is the same model summed over the row against x,
// whose Σⱼ xⱼ²·Σₖ Sᵢⱼₖ² the projections' own partial sums estimate at no
// extra pass (Rows). Full is the mode that certifies: Freivalds catches an
// element wrong by more than its tolerance over |xⱼ|, wrong rows, columns
// and blocks.
//
// # NaN, Inf and overflow
//
// A NaN or an Inf in A's row i makes every element of C's row i NaN or
// ±Inf in IEEE arithmetic, and one in B's column j the whole column j:
// both modes require exactly that of those elements and check the rest as
// usual (Freivalds' vectors are zero on B's non-finite columns), so one
// NaN neither hides an error elsewhere nor makes the check full. Finite
// inputs may still overflow float32. Every partial sum of an element, in
// any order, lies between minus the magnitudes of its negative terms added
// up and plus those of its positive ones: so +Inf is accepted where the
// positive ones pass float32's largest value (with γ_K of slack for
// rounding), −Inf where the negative ones do, NaN where both do, as
// float32 arithmetic (and NumPy's float32 product) makes them; any other
// non-finite element fails. Freivalds checks a row of C holding one in
// full, so its other elements are still checked.
//
// # float64 products
//
// Check64 checks a float64 product (glcompute.Device.Mul64) on the same
// model with u = 2⁻⁵³, against a reference summed in double-double
// (Dot2: exact products by fused multiply-add, exact additions by TwoSum),
// whose error γ_K(u)²·Σ|a||b| is far below the product's: a float64
// reference's own error, of the product's order, would leave a check of
// float32 strength. Freivalds' sums are double-double too. A float64
// product wrong by 10⁻¹⁰ fails from K = 1 to 2²⁴.
//
// This package never imports GL.
package validate
