package matfile

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
)

// benchRows is the block of rows the benchmarks read and write: a row
// panel of glmul mul.
const benchRows = 1024

// BenchmarkReadRowsNPY reads a 64 MiB .npy file (in the page cache) in
// blocks of 1024 rows into one reused block: MB/s of the file's data.
func BenchmarkReadRowsNPY(b *testing.B) {
	for _, c := range []struct {
		name    string
		dtype   string
		fortran bool
		rows    int
		pad     int // dst.Stride - Cols
	}{
		{"f4", "<f4", false, 4096, 0},
		{"f4-stride", "<f4", false, 4096, 16},
		{"f4-big-endian", ">f4", false, 4096, 0},
		{"f8", "<f8", false, 2048, 0},
		{"f4-fortran", "<f4", true, 4096, 0},
		{"f8-fortran", "<f8", true, 2048, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			const cols = 4096
			vals := randValues(1, c.rows*cols)
			path := writeNPYFile(b, b.TempDir(), c.dtype, c.fortran, c.rows, cols, vals)
			s, err := Open(path, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			dst := newDst(benchRows, cols, cols+c.pad)
			_, item, _ := npyDtype(c.dtype)
			b.SetBytes(int64(c.rows * cols * item))
			b.ResetTimer()
			for range b.N {
				for r0 := 0; r0 < c.rows; r0 += benchRows {
					if err := s.ReadRows(dst, r0); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkSinkNPY writes a 64 MiB matrix through a .npy Sink into a
// reused bytes.Buffer in blocks of 1024 rows: MB/s of data.
func BenchmarkSinkNPY(b *testing.B) {
	for _, c := range []struct {
		name   string
		pad    int
		direct bool
	}{{"direct", 0, true}, {"direct-stride", 16, true}, {"converted", 0, false}} {
		b.Run(c.name, func(b *testing.B) {
			const rows, cols = 4096, 4096
			m := randMatrix(1, rows, cols, cols+c.pad)
			var out bytes.Buffer
			out.Grow(rows*cols*4 + 128)
			b.SetBytes(rows * cols * 4)
			b.ResetTimer()
			for range b.N {
				out.Reset()
				s, _ := NewSink(&out, "c.npy", rows, cols)
				s.(*npySink).direct = s.(*npySink).direct && c.direct
				for r0 := 0; r0 < rows; r0 += benchRows {
					if err := s.WriteRows(blas32.General{Rows: benchRows, Cols: cols, Stride: m.Stride, Data: m.Data[r0*m.Stride:]}); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadMTX parses a 2000×2000 "array real general" file and a
// coordinate file of 1M entries ("i j v", random places in 2000×2000),
// values as float64 in 17 digits; and the same two with float32 values in
// their shortest text, as glmul writes them (sink-1000x1000: 1M entries
// written by a .mtx Sink): MB/s of text.
func BenchmarkReadMTX(b *testing.B) {
	for _, format := range []string{"array", "coordinate", "array-float32", "coordinate-float32", "sink-1000x1000"} {
		b.Run(format, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), format+".mtx")
			writeBenchMTX(b, path, format)
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(fi.Size())
			b.ResetTimer()
			for range b.N {
				if _, _, err := ReadWith(path, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// writeBenchMTX writes BenchmarkReadMTX's file of format.
func writeBenchMTX(b *testing.B, path, format string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if format == "sink-1000x1000" {
		m := randMatrix(3, 1000, 1000, 1000)
		s, _ := NewSink(f, path, 1000, 1000)
		s.WriteRows(m)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		return
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(4, 4))
	const n, nnz = 2000, 1 << 20
	digits, bits := 17, 64
	if strings.HasSuffix(format, "-float32") {
		digits, bits = -1, 32
	}
	if strings.HasPrefix(format, "array") {
		fmt.Fprintf(w, "%%%%MatrixMarket matrix array real general\n%d %d\n", n, n)
	} else {
		fmt.Fprintf(w, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", n, n, nnz)
	}
	var line []byte
	for k := range map[bool]int{true: n * n, false: nnz}[strings.HasPrefix(format, "array")] {
		line = line[:0]
		if !strings.HasPrefix(format, "array") {
			line = strconv.AppendInt(line, int64(1+rng.IntN(n)), 10)
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(1+rng.IntN(n)), 10)
			line = append(line, ' ')
		}
		v := rng.NormFloat64()
		if k%2 == 0 {
			v *= 1e-3
		}
		line = strconv.AppendFloat(line, v, 'g', digits, bits)
		w.Write(append(line, '\n'))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}
