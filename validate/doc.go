// Package validate checks a float32 matrix product against float64
// arithmetic, with tolerances derived from the shared dimension K and the
// float32 unit roundoff u = 2⁻²⁴, never from a constant tuned until green.
//
// # Modes
//
// Full recomputes C in float64 and checks every element against the classic
// worst-case bound for a K-term float32 dot product (Higham, Accuracy and
// Stability of Numerical Algorithms, §3.1):
//
//	|ĉᵢⱼ − cᵢⱼ| ≤ γ_K (|A||B|)ᵢⱼ,   γ_K = Ku / (1 − Ku)
//
// It costs two float64 products (C and |A||B|), O(MNK).
//
// Freivalds checks C·x against A·(B·x) in float64 for a few random vectors
// x, O(MN + MK + KN) each. A worst-case bound on (ĈX − ABX)ᵢ is too loose
// to catch anything at large sizes, so this mode uses the probabilistic
// bound of Higham and Mary (SIAM J. Sci. Comput. 41(5), 2019): rounding
// errors of a K-term dot product stay below λ√K·u·Σ|aᵢₖ||bₖⱼ| with
// probability rising rapidly with λ; summed over j against a random x they
// grow like a random walk (a second factor λ), and Cauchy–Schwarz bounds
// (|A||B|)ᵢⱼ by ‖Aᵢ‖‖Bⱼ‖, which keeps the check O(n²):
//
//	|(Ĉx)ᵢ − (A(Bx))ᵢ| ≤ λ²√K·u · ‖Aᵢ,:‖₂ · (Σⱼ ‖B:,ⱼ‖₂² xⱼ²)^½,   λ = 6
//
// plus the float64 evaluation's own error, γ_{K+N}(u₆₄)·(‖Aᵢ,:‖·‖|B||x|‖ +
// ‖Ĉᵢ,:‖·‖x‖). Rows applies it a block of rows at a time, for a C that
// arrives in panels, all vectors in one pass over each row.
//
// It catches a wrong element whose error exceeds that bound divided by |xⱼ|,
// wrong rows, wrong columns and wrong blocks; Full is the mode that certifies.
//
// # NaN, Inf and overflow
//
// NaN and Inf in A or B propagate by IEEE arithmetic: Full accepts a
// non-finite element where a non-finite input meets it (Panels checks such
// rows in full). Finite inputs may still overflow float32. Every partial
// sum of an element, in any order, lies between minus the magnitudes of its
// negative terms added up and plus those of its positive ones: so +Inf is
// accepted where the positive ones pass float32's largest value (with γ_K
// of slack for rounding), −Inf where the negative ones do, NaN where both
// do, as float32 arithmetic (and NumPy's float32 product) makes them; any
// other non-finite element fails. Freivalds checks a row of C holding one
// in full, so its other elements are still checked (where B in float64
// fits 2 GiB; beyond, the row fails as before).
//
// This package never imports GL.
package validate
