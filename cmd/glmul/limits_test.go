package main

import (
	"strings"
	"testing"
	"time"
)

// TestRunawaysRefused: counts and sizes that would run or allocate without
// end are refused at once, before any device is opened (issue 23, item 5:
// tune -n 100000 allocated until the OOM killer ended it after 67 s;
// -warmup 1000000000 and table -reps 99999999999 ran unbounded). Each
// case also carries a later mistake (-format xml, a cache that is a
// directory), so that a limit not checked first fails on that one at once
// rather than running away.
func TestRunawaysRefused(t *testing.T) {
	cacheDir := t.TempDir() // not a file: tune fails on it after the size checks
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"-n", "8", "-warmup", "1000000000", "-format", "xml"}, 2, []string{"-warmup must be 0 to 10000 (got 1000000000)"}},
		{[]string{"-n", "8", "-warmup", "-1", "-format", "xml"}, 2, []string{"-warmup must be 0 to 10000 (got -1)"}},
		{[]string{"-n", "8", "-reps", "99999999999", "-format", "xml"}, 2, []string{"-reps must be 1 to 1000000 (got 99999999999)"}},
		{[]string{"table", "-reps", "99999999999", "-format", "xml"}, 2, []string{"table: -reps must be 1 to 1000000 (got 99999999999)"}},
		{[]string{"bench", "-reps", "99999999999", "-format", "xml"}, 2, []string{"bench: -reps must be 1 to 1000000 (got 99999999999)"}},
		{[]string{"tune", "-reps", "99999999999", "-format", "xml"}, 2, []string{"tune: -reps must be 1 to 1000000 (got 99999999999)"}},
		{[]string{"tune", "-n", "999999999999", "-format", "xml"}, 2, []string{"tune: -n must be 16 to 536870912 (got 999999999999)"}},
		// (N/2)³, N³ and (2N)³ at N = 10⁶ take 54 TiB: no machine holds them.
		{[]string{"tune", "-n", "1000000"}, 1, []string{"tune: -n 1000000: the square products (500000×500000×500000, 1000000×1000000×1000000, 2000000×2000000×2000000)", "GiB of host memory for their A, B and C; this machine has"}},
		{[]string{"tune", "-n", "1000000", "-classes", "thin-k"}, 1, []string{"the thin-k products (1000000×64×1000000, 2000000×128×2000000, 500000×32×500000)", "GiB of host memory"}},
		{[]string{"tune", "-n", "1000000", "-classes", "long-k"}, 1, []string{"the long-k products (31250×2000000×31250, 125000×4000000×125000, 500000×2000000×500000)", "GiB of host memory"}},
	} {
		t.Setenv("GLMUL_TUNE_CACHE", cacheDir)
		start := time.Now()
		code, stdout, stderr := glmul(c.args...)
		took := time.Since(start)
		ok := code == c.code && stdout == "" && took < 5*time.Second
		for _, w := range c.want {
			ok = ok && strings.Contains(stderr, w)
		}
		if !ok {
			t.Errorf("glmul %v: exit %d after %v, stderr %q, stdout %q; want exit %d at once and %q", c.args, code, took.Round(time.Millisecond), stderr, stdout, c.code, c.want)
		}
	}
}

// TestHelpStatesLimits: each command's -h gives the bounds of -reps and
// -warmup, and the warm-up as it runs: the -warmup runs in full however
// long they take, the runs added after them none begun after 0.8 s (the
// help used to promise a warm-up of at most 0.8 s).
func TestHelpStatesLimits(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"-h"}, []string{"timed runs, 1 to 1000000", "0 to 10000, each in full however long it takes", "none begun after 0.8 s"}, []string{"at most 0.8 s"}},
		{[]string{"bench", "-h"}, []string{"1 to 1000000, after a warm-up: one run in full, more until 0.5 s has passed", "none begun after 0.8 s"}, []string{"at most 0.8 s"}},
		{[]string{"table", "-h"}, []string{"1 to 1000000, after a warm-up: one run in full, more until 0.5 s has passed", "none begun after 0.8 s"}, []string{"at most 0.8 s"}},
		{[]string{"tune", "-h"}, []string{"timed runs per candidate and product, 1 to 1000000"}, nil},
	} {
		code, stdout, stderr := glmul(c.args...)
		help := strings.Join(strings.Fields(stdout), " ") // PrintDefaults wraps nothing, but indents
		for _, w := range c.want {
			if code != 0 || !strings.Contains(help, w) {
				t.Errorf("glmul %v: exit %d, help lacks %q:\n%s", c.args, code, w, stdout)
			}
		}
		for _, n := range c.not {
			if strings.Contains(help, n) {
				t.Errorf("glmul %v: help still says %q:\n%s", c.args, n, stdout)
			}
		}
		if stderr != "" {
			t.Errorf("glmul %v: help on stdout, but stderr has %q", c.args, stderr)
		}
	}
}
