// Command startup measures what a new glmul process spends before and
// around its first product, stage by stage (issue 27's start-up work):
// from the process's creation to main (the Go runtime and the dynamic
// loader: libEGL, libGL), glcompute.Open (the context, GL's functions,
// the device's limits, the SM-count dispatch, the kernel choice and the
// tuning cache), the first compile of the kernel a 128³ product runs, the
// first product (buffers, staging, upload, dispatch, readback) and a
// second one, and Release. Run it several times (each run is one process)
// and read the medians:
//
//	for i in $(seq 10); do go run ./bench/startup; done
//
// It prints one line per stage, in milliseconds, and "-json" prints them as
// one JSON object per run. Linux only (the process's start time comes from
// /proc/self/stat).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuner"
)

// stage is one measured stage.
type stage struct {
	Name string  `json:"stage"`
	MS   float64 `json:"ms"`
}

func main() {
	mainAt := time.Now()
	asJSON := flag.Bool("json", false, "print the stages as one JSON object")
	n := flag.Int("n", 128, "the product's size")
	backend := flag.String("backend", "egl", "glcompute backend")
	flag.Parse()
	stages, err := measure(mainAt, *n, glcompute.Backend(*backend))
	if err != nil {
		fmt.Fprintln(os.Stderr, "startup:", err)
		os.Exit(1)
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(stages)
		return
	}
	for _, s := range stages {
		fmt.Printf("%-28s %8.2f ms\n", s.Name, s.MS)
	}
}

// measure runs the stages and returns their times.
func measure(mainAt time.Time, n int, backend glcompute.Backend) ([]stage, error) {
	var out []stage
	last := mainAt
	mark := func(name string) {
		now := time.Now()
		out = append(out, stage{name, float64(now.Sub(last)) / 1e6})
		last = now
	}
	if since, ok := sinceProcessStart(mainAt); ok {
		out = append(out, stage{"process start to main", float64(since) / 1e6})
	}
	d, err := glcompute.Open(&glcompute.Options{Backend: backend})
	if err != nil {
		return nil, err
	}
	mark("glcompute.Open")
	spec := tuner.Of(d).KernelFor(n, n, n)
	if _, err := tuner.Of(d).ProgramBinary(spec); err != nil {
		return nil, err
	}
	mark("first compile (" + spec + ")")
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, c := cpu.Random(n, n, rng), cpu.Random(n, n, rng), cpu.New(n, n)
	for _, what := range []string{"first product", "second product"} {
		if err := mul(d, c, a, b); err != nil {
			return nil, err
		}
		mark(fmt.Sprintf("%s (%d³)", what, n))
	}
	d.Release()
	mark("Release")
	var total float64
	for _, s := range out {
		total += s.MS
	}
	return append(out, stage{"total", total}), nil
}

// mul runs one product as glmul -n does (pipelined, from host memory).
func mul(d *glcompute.Device, c, a, b blas32.General) error {
	_, err := d.Mul(c, a, b, nil)
	return err
}

// sinceProcessStart is how long before t the process was created, from
// /proc/self/stat's start time (clock ticks after boot, 100 a second) and
// /proc/uptime: a resolution of 10 ms.
func sinceProcessStart(t time.Time) (time.Duration, bool) {
	stat, err1 := os.ReadFile("/proc/self/stat")
	up, err2 := os.ReadFile("/proc/uptime")
	if err1 != nil || err2 != nil {
		return 0, false
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 20 {
		return 0, false
	}
	ticks, err1 := strconv.ParseFloat(f[19], 64) // field 22 of stat: starttime
	uptime, err2 := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration((uptime-ticks/100)*1e9) - time.Since(t), true
}
