// Command hostcopy measures how fast this host copies memory on its
// CPUs: one copy of a matrix over 4 to GOMAXPROCS goroutines, and two
// copies at once, as a group of two GPUs makes when each device's staging
// copies run beside the other's (issue 46; docs/PERFORMANCE.md, "Two
// H200s at 16384: the host's copies"). The matrices are cpu.New's (huge
// pages advised) and touched before the clock; each figure is the best
// of -reps.
//
//	go run ./bench/hostcopy [-mib 1024] [-reps 3]
//
// It also prints how long the first touch of fresh memory took, filled
// on one goroutine and by parallel copies (what a new process pays to
// make its inputs), and the rate of copies row by row of a column panel
// of a matrix 8 panels wide, into it ("out", as a band of C leaves
// staging) and out of it ("in", as a piece of B enters), two at once.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/glmul/glmul/cpu"
)

// matrices are the copies' sources and destinations, procs the
// goroutines there are CPUs for, reps the copies a figure is the best of.
type matrices struct {
	src, src2, dst, dst2 []float32
	procs, reps          int
}

func main() {
	mib := flag.Int("mib", 1024, "each matrix's size in MiB")
	reps := flag.Int("reps", 3, "timed copies of each kind; the best is printed")
	flag.Parse()
	if *mib < 1 || *reps < 1 {
		fmt.Fprintln(os.Stderr, "hostcopy: -mib and -reps want a whole number ≥ 1")
		os.Exit(2)
	}
	procs := runtime.GOMAXPROCS(0)
	fmt.Printf("GOMAXPROCS %d, matrices of %d MiB\n", procs, *mib)
	m := firstTouch(*mib<<18, procs)
	m.reps = *reps
	m.whole()
	m.panels()
}

// firstTouch makes the four matrices of n floats, reporting how fast
// fresh memory was written: the first filled on one goroutine, the other
// three by parallel copies of it at once.
func firstTouch(n, procs int) *matrices {
	m := &matrices{procs: procs}
	t := time.Now()
	m.src = cpu.New(1, n).Data
	for i := range m.src {
		m.src[i] = float32(i)
	}
	d := time.Since(t)
	fmt.Printf("first touch, one goroutine filling: %.1f ms, %.1f GB/s\n", ms(d), gb(float64(4*n), d))
	m.src2, m.dst, m.dst2 = cpu.New(1, n).Data, cpu.New(1, n).Data, cpu.New(1, n).Data
	t = time.Now()
	var wg sync.WaitGroup
	for _, to := range [][]float32{m.src2, m.dst, m.dst2} {
		wg.Go(func() { parallel(max(1, procs/3), to, m.src) })
	}
	wg.Wait()
	d = time.Since(t)
	fmt.Printf("first touch, three parallel copies at once: %.1f ms, %.1f GB/s written\n", ms(d), gb(float64(12*n), d))
	return m
}

// whole times one copy of a whole matrix over 4, 8, … procs goroutines,
// then two at once over a quarter and a half of them each.
func (m *matrices) whole() {
	n := float64(4 * len(m.src))
	for w := 4; ; w *= 2 {
		w = min(w, m.procs)
		d := best(m.reps, func() { parallel(w, m.dst, m.src) })
		fmt.Printf("one copy, %2d goroutines: %.1f ms, %.1f GB/s\n", w, ms(d), gb(n, d))
		if w == m.procs {
			break
		}
	}
	for w := max(1, m.procs/4); ; w = max(1, m.procs/2) {
		d := best(m.reps, func() {
			var wg sync.WaitGroup
			wg.Go(func() { parallel(w, m.dst, m.src) })
			wg.Go(func() { parallel(w, m.dst2, m.src2) })
			wg.Wait()
		})
		fmt.Printf("two copies at once, %2d goroutines each: %.1f ms, %.1f GB/s together\n", w, ms(d), gb(2*n, d))
		if w == max(1, m.procs/2) {
			break
		}
	}
}

// panels times two copies at once, row by row, of a panel of 2048
// columns into and out of a matrix 8 panels wide (dst and dst2; the
// panels are src and src2), over half the goroutines each.
func (m *matrices) panels() {
	cols := 2048
	rows := len(m.src) / (8 * cols)
	if rows == 0 {
		return
	}
	w := max(1, m.procs/2)
	for _, dir := range []string{"out", "in"} {
		d := best(m.reps, func() {
			var wg sync.WaitGroup
			for _, p := range [][2][]float32{{m.dst, m.src}, {m.dst2, m.src2}} {
				wide, panel := p[0], p[1]
				wg.Go(func() {
					if dir == "out" {
						rowsCopy(w, wide, 8*cols, panel, cols, rows, cols)
					} else {
						rowsCopy(w, panel, cols, wide, 8*cols, rows, cols)
					}
				})
			}
			wg.Wait()
		})
		fmt.Printf("two %s copies of a %d×%d panel at once, row by row, %2d goroutines each: %.1f ms, %.1f GB/s together\n",
			dir, rows, cols, w, ms(d), gb(float64(8*rows*cols), d))
	}
}

// rowsCopy copies rows rows of cols floats from src (lds apart) to dst
// (ldd apart), in w parts of rows, one a goroutine.
func rowsCopy(w int, dst []float32, ldd int, src []float32, lds, rows, cols int) {
	var wg sync.WaitGroup
	for i := range w {
		r0, r1 := rows*i/w, rows*(i+1)/w
		wg.Go(func() {
			for r := r0; r < r1; r++ {
				copy(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
			}
		})
	}
	wg.Wait()
}

// parallel copies src into dst in w equal parts, one a goroutine.
func parallel(w int, dst, src []float32) {
	var wg sync.WaitGroup
	for i := range w {
		i0, i1 := len(dst)*i/w, len(dst)*(i+1)/w
		wg.Go(func() { copy(dst[i0:i1], src[i0:i1]) })
	}
	wg.Wait()
}

func best(reps int, f func()) time.Duration {
	b := time.Duration(1<<63 - 1)
	for range reps {
		t := time.Now()
		f()
		b = min(b, time.Since(t))
	}
	return b
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func gb(bytes float64, d time.Duration) float64 { return bytes / d.Seconds() / 1e9 }
