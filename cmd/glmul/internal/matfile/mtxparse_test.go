package matfile

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// checkFastFloat fails t if fastFloat takes s and disagrees with
// strconv.ParseFloat, bit for bit, or takes what strconv refuses.
func checkFastFloat(t *testing.T, s string) bool {
	t.Helper()
	v, ok := fastFloat([]byte(s))
	if !ok {
		return false
	}
	w, err := strconv.ParseFloat(s, 64)
	if err != nil || math.Float64bits(v) != math.Float64bits(w) {
		t.Errorf("fastFloat(%q) = %v (%#x), strconv: %v (%#x) %v", s, v, math.Float64bits(v), w, math.Float64bits(w), err)
	}
	return true
}

// fastFloat agrees with strconv wherever it parses, and parses what
// glmul writes: float32's shortest text, of ordinary magnitudes.
func TestFastFloat(t *testing.T) {
	for _, s := range []string{"0", "-0", "+0", "0.0", ".5", "5.", "-.25e+1", "1e22", "1e-22", "9007199254740992", "9007199254740993",
		"1.5E3", "123456789e-5", "0.000000000000000000000000001", "4.9e-324", "1e23", "1e-23", "1e", "1e+", "e5", ".", "-", "+-1",
		"1.2.3", "1_000", "0x1p3", "inf", "NaN", "1e00001", "00012", "0.1234567890123456789", "1234567890123456789012"} {
		checkFastFloat(t, s)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	taken := 0
	for range 200000 {
		f := math.Float32frombits(rng.Uint32())
		if f != f || math.IsInf(float64(f), 0) {
			continue
		}
		s := strconv.FormatFloat(float64(f), 'g', -1, 32)
		if checkFastFloat(t, s) && math.Abs(float64(f)) > 1e-10 && math.Abs(float64(f)) < 1e10 {
			taken++
		}
		for _, prec := range []int{1, 5, 12, 16, 17} {
			checkFastFloat(t, strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(50)-25)), 'g', prec, 64))
			checkFastFloat(t, strconv.FormatFloat(rng.NormFloat64(), 'f', prec, 64))
		}
	}
	if taken < 1000 {
		t.Errorf("fastFloat took %d float32 texts between 1e-10 and 1e10", taken)
	}
}

// FuzzFastFloat: fastFloat never disagrees with strconv.
func FuzzFastFloat(f *testing.F) {
	for _, s := range []string{"1.5", "-0.001", "1e22", "9007199254740993", ".5e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkFastFloat(t, s) })
}
