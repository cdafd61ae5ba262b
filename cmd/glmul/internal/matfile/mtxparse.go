package matfile

import "bytes"

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat parses a plain decimal, [+-]digits[.digits][(e|E)[+-]digits]
// (digits on at least one side of the point), whose value is m×10^e with
// m ≤ 2^53 and |e| ≤ 22 (or m = 0): float64(m) is exact, and so is
// 10^|e|, so one multiplication or division rounds it correctly, to the
// float64 that strconv.ParseFloat returns (Clinger's fast path, which
// strconv also takes). ok is false for anything else (more digits, a
// larger exponent, hexadecimal, inf, nan, not a number), for strconv.
// float32 values written in their shortest form (9 digits at most) take
// this path.
func fastFloat(s []byte) (v float64, ok bool) {
	i, neg := 0, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg, i = s[i] == '-', i+1
	}
	var m uint64
	start := i
	for ; i < len(s) && s[i]-'0' < 10; i++ {
		m = m*10 + uint64(s[i]-'0')
	}
	digits, e := i-start, 0
	if i < len(s) && s[i] == '.' {
		i++
		frac := i
		for ; i < len(s) && s[i]-'0' < 10; i++ {
			m = m*10 + uint64(s[i]-'0')
		}
		digits, e = digits+i-frac, frac-i
	}
	// At most 19 digits: m has not wrapped around.
	if digits == 0 || digits > 19 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		x, ok := exponent(s[i+1:])
		if !ok {
			return 0, false
		}
		e, i = e+x, len(s)
	}
	v = float64(m)
	switch {
	case i != len(s) || m > 1<<53:
		return 0, false
	case m == 0 || e == 0:
	case e > 0 && e < len(pow10):
		v *= pow10[e]
	case e < 0 && -e < len(pow10):
		v /= pow10[-e]
	default:
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// exponent parses an exponent's [+-]digits, all of s, of at most four
// digits.
func exponent(s []byte) (int, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 4 {
		return 0, false
	}
	x := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		x = x*10 + int(c-'0')
	}
	if neg {
		x = -x
	}
	return x, true
}

// unicodeFields is splitFields with Unicode's spaces, as strings.Fields
// splits: the slow way, for lines that ASCII spaces do not split right.
func unicodeFields(t []byte, f [][]byte) int {
	all := bytes.Fields(t)
	return copy(f, all)
}

// splitFields sets f to t's whitespace-separated fields, views of t, as
// many as f holds, and returns how many it set.
func splitFields(t []byte, f [][]byte) int {
	n := 0
	for n < len(f) {
		for len(t) > 0 && (t[0] == ' ' || t[0] == '\t' || t[0] == '\v' || t[0] == '\f' || t[0] == '\r') {
			t = t[1:]
		}
		if len(t) == 0 {
			break
		}
		k := 0
		for k < len(t) && t[k] != ' ' && t[k] != '\t' && t[k] != '\v' && t[k] != '\f' && t[k] != '\r' {
			k++
		}
		f[n], t = t[:k], t[k:]
		n++
	}
	return n
}
