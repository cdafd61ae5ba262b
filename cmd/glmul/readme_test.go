package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// TestREADMECountsCandidates: docs/TUNING.md's counts (README's once) of the configurations
// glmul tune sweeps are the code's (it said 188 fast ones, 14 reading A
// transposed, where there were 218 and 28).
func TestREADMECountsCandidates(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "TUNING.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ") // lines joined
	fast := tuning.FastCandidates()
	transposed := 0
	for _, s := range fast {
		if strings.Contains(s, "_at") {
			transposed++
		}
	}
	for _, c := range []struct {
		re   string
		want []int
	}{
		{"`glmul tune` runs all ([0-9]+) configurations of the fast kernel \\(([0-9]+) of them reading A transposed\\)", []int{len(fast), transposed}},
		{"on Mesa llvmpipe the ([0-9]+) of the `cpu` kernel instead", []int{len(shaders.CPUCandidates())}},
		{"`glmul tune -type f64` sweeps the float64 kernel's configurations instead: the ([0-9]+) of `shaders.DFastCandidates`", []int{len(shaders.DFastCandidates())}},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(readme)
		if m == nil {
			t.Errorf("docs/TUNING.md lacks %q: keep its counts beside this test's", c.re)
			continue
		}
		for i, w := range c.want {
			if got, _ := strconv.Atoi(m[i+1]); got != w {
				t.Errorf("docs/TUNING.md says %q: count %d is %d in the code", m[0], i+1, w)
			}
		}
	}
}
