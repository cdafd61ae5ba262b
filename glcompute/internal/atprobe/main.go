// Command atprobe times fast.comp against a prototype reading A transposed
// in global memory (fastat.comp), configuration by configuration, at n³,
// every product checked against float64 at sampled entries.
//
//	atprobe N [at:|nat:]CONFIG...
package main

import (
	_ "embed"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/probe"
	"github.com/glmul/glmul/shaders"
)

//go:embed fastat.comp
var fastat string

func init() { runtime.LockOSThread() }

func main() {
	probe.Context()
	fmt.Println(glw.Renderer(), glw.Version())
	n, _ := strconv.Atoi(os.Args[1])
	reps, _ := strconv.Atoi(os.Getenv("REPS"))
	if reps == 0 {
		reps = 10
	}
	rng := rand.New(rand.NewSource(1))
	a := make([]float32, n*n)
	b := make([]float32, n*n)
	at := make([]float32, n*n)
	for i := range a {
		a[i], b[i] = rng.Float32()*2-1, rng.Float32()*2-1
	}
	for i := 0; i < n; i++ {
		for k := 0; k < n; k++ {
			at[k*n+i] = a[i*n+k]
		}
	}
	ba, _ := glw.NewStorageBuffer(4*n*n, unsafe.Pointer(&a[0]), glw.StaticDraw)
	bat, _ := glw.NewStorageBuffer(4*n*n, unsafe.Pointer(&at[0]), glw.StaticDraw)
	bb, _ := glw.NewStorageBuffer(4*n*n, unsafe.Pointer(&b[0]), glw.StaticDraw)
	bc, _ := glw.NewStorageBuffer(4*n*n, nil, glw.StaticRead)
	out := make([]float32, n*n)
	for _, arg := range os.Args[2:] {
		mode, spec, ok := strings.Cut(arg, ":")
		if !ok {
			mode, spec = "nat", arg
		}
		// at+PF+MIDLOAD: extra #defines for the prototype
		flags := strings.Split(mode, "+")
		mode, defs := flags[0], ""
		for _, f := range flags[1:] {
			defs += "#define " + f + " 1\n"
		}
		k, err := shaders.Lookup("fast:" + spec)
		if err != nil {
			fmt.Println(err)
			continue
		}
		src, abuf := k.Source, ba
		switch mode {
		case "at": // A transposed in global memory
			i := strings.Index(src, "#line 1\n")
			src, abuf = src[:i]+defs+"#define AG 1\n#line 1\n"+fastat, bat
		case "tr": // A natural, transposed on its way into shared memory
			i := strings.Index(src, "#line 1\n")
			src = src[:i] + defs + "#define AG 0\n#line 1\n" + fastat
		default: // fast.comp itself, with the flags' #defines
			i := strings.Index(src, "#line 1\n")
			src = src[:i] + defs + src[i:]
			if k.TransposeA { // an _at configuration: A transposed in global memory
				abuf = bat
			}
		}
		p, err := glw.NewComputeProgram(mode+".comp", src)
		if err != nil {
			fmt.Println(arg, err)
			continue
		}
		if dir := os.Getenv("DUMP"); dir != "" { // the driver's program binary (NVIDIA: its assembly as text)
			_, bin := p.Binary()
			if err := os.WriteFile(dir+"/"+strings.Join(flags, "+")+"_"+spec+".bin", bin, 0o644); err != nil {
				fmt.Println(err)
			}
		}
		probe.SetSquare(p, n)
		abuf.BindStorage(0)
		bb.BindStorage(1)
		bc.BindStorage(2)
		gx, gy := (n+k.TileN-1)/k.TileN, (n+k.TileM-1)/k.TileM
		run := func() time.Duration {
			s := time.Now()
			for i := 0; i < reps; i++ {
				glw.Dispatch(gx, gy)
			}
			glw.Finish()
			return time.Since(s) / time.Duration(reps)
		}
		run()
		var ts []float64
		for i := 0; i < 5; i++ {
			ts = append(ts, run().Seconds())
		}
		sort.Float64s(ts)
		bc.Read(0, 4*n*n, unsafe.Pointer(&out[0]))
		maxErr := 0.0
		for t := 0; t < 64; t++ {
			i, j := rng.Intn(n), rng.Intn(n)
			if t < 4 {
				i, j = []int{0, n - 1, 0, n - 1}[t], []int{0, n - 1, n - 1, 0}[t]
			}
			s := 0.0
			for k := 0; k < n; k++ {
				s += float64(a[i*n+k]) * float64(b[k*n+j])
			}
			maxErr = max(maxErr, abs(s-float64(out[i*n+j])))
		}
		fl := 2 * float64(n) * float64(n) * float64(n)
		fmt.Printf("%-16s %-22s %.3f ms %.2f TFLOPS (best %.2f) maxerr %.2g %v\n", strings.Join(flags, "+"), spec, ts[2]*1e3, fl/ts[2]/1e12, fl/ts[0]/1e12, maxErr, glw.CheckError("probe"))
		p.Release()
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
