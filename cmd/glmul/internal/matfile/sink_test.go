package matfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/blas/blas32"
)

// refWriteNPY is writeNPY as it was before the Sink, element by element:
// the reference the Sink's output must equal byte for byte.
func refWriteNPY(w *bytes.Buffer, m blas32.General) {
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", m.Rows, m.Cols)
	pad := (64 - (10+len(dict)+1)%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	bw := bufio.NewWriter(w)
	bw.WriteString("\x93NUMPY\x01\x00")
	binary.Write(bw, binary.LittleEndian, uint16(len(dict)))
	bw.WriteString(dict)
	var buf [4]byte
	for i := 0; i < m.Rows; i++ {
		for _, v := range m.Data[i*m.Stride : i*m.Stride+m.Cols] {
			binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
			bw.Write(buf[:])
		}
	}
	bw.Flush()
}

// randMatrix returns a seeded random rows×cols matrix of stride, with
// the sentinel in its padding, and float32's special values here and
// there: ±0, ±Inf, NaN, subnormals, the largest.
func randMatrix(seed uint64, rows, cols, stride int) blas32.General {
	rng := rand.New(rand.NewPCG(seed, 11))
	m := newDst(rows, cols, stride)
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.SmallestNonzeroFloat32, -1e-40, math.MaxFloat32}
	for i := range rows {
		for j := range cols {
			v := float32((rng.Float64()*2 - 1) * math.Pow(10, float64(rng.IntN(60)-30)))
			if rng.IntN(10) == 0 {
				v = special[rng.IntN(len(special))]
			}
			m.Data[i*stride+j] = v
		}
	}
	return m
}

// writeBlocks writes m to a Sink for path in blocks of the sizes given
// (the last one taking the rest), and returns the bytes written.
func writeBlocks(t *testing.T, path string, m blas32.General, sizes []int, direct bool) []byte {
	t.Helper()
	var out bytes.Buffer
	s, err := NewSink(&out, path, m.Rows, m.Cols)
	if err != nil {
		t.Fatal(err)
	}
	if ns, ok := s.(*npySink); ok {
		ns.direct = ns.direct && direct
	}
	r0 := 0
	for k, n := range sizes {
		if k == len(sizes)-1 || r0+n > m.Rows {
			n = m.Rows - r0
		}
		b := blas32.General{Rows: n, Cols: m.Cols, Stride: m.Stride, Data: m.Data[r0*m.Stride:]}
		if err := s.WriteRows(b); err != nil {
			t.Fatal(err)
		}
		r0 += n
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// The .npy Sink writes, in blocks of uneven sizes, from matrices of any
// stride, by either path, what the element-by-element writer wrote: the
// same bytes; npyio reads them back as the matrix.
func TestSinkNPY(t *testing.T) {
	for _, c := range []struct {
		rows, cols, stride int
		sizes              []int
	}{
		{1, 1, 1, []int{1}},
		{7, 5, 5, []int{1, 0, 3, 100}},
		{7, 5, 9, []int{2, 2, 2, 1}},
		{300, 1000, 1003, []int{1, 299}}, // rows of 4000 bytes: many a buffer
		{2, 300000, 300000, []int{1, 1}}, // a row beyond the buffer
		{2, 300000, 300001, []int{1, 1}},
	} {
		m := randMatrix(uint64(c.rows*c.cols), c.rows, c.cols, c.stride)
		var want bytes.Buffer
		refWriteNPY(&want, m)
		for _, direct := range []bool{true, false} {
			got := writeBlocks(t, "c.npy", m, c.sizes, direct)
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%d×%d stride %d direct %v: %d bytes differ from the reference's %d", c.rows, c.cols, c.stride, direct, len(got), want.Len())
			}
		}
		var back []float32
		if err := npy.Read(bytes.NewReader(want.Bytes()), &back); err != nil || len(back) != c.rows*c.cols {
			t.Fatalf("npyio: %v, %d floats", err, len(back))
		}
		checkRows(t, "npyio", blas32.General{Rows: c.rows, Cols: c.cols, Stride: c.cols, Data: back}, 0, compact(m))
	}
}

// compact returns m's elements row-major without padding.
func compact(m blas32.General) []float32 {
	out := make([]float32, 0, m.Rows*m.Cols)
	for i := range m.Rows {
		out = append(out, m.Data[i*m.Stride:i*m.Stride+m.Cols]...)
	}
	return out
}

// The header, byte for byte, as NumPy before 1.23 writes it for a C-order
// float32 array (np.save(f, np.zeros((2, 3), np.float32)), format 1.0);
// NumPy 1.23 and later add 21 - len(str(rows)) spaces more for growth
// before padding, which readers ignore. And a whole small file.
func TestSinkNPYHeader(t *testing.T) {
	for _, c := range []struct {
		rows, cols int
		want       string
	}{
		{2, 3, "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" + strings.Repeat(" ", 58) + "\n"},
		{123456, 7890123, "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (123456, 7890123), }" + strings.Repeat(" ", 47) + "\n"},
		{1, 1, "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }" + strings.Repeat(" ", 58) + "\n"},
	} {
		if got := string(npyHeader(c.rows, c.cols)); got != c.want || len(got)%64 != 0 {
			t.Errorf("%d×%d: %q, want %q", c.rows, c.cols, got, c.want)
		}
	}
	m := blas32.General{Rows: 1, Cols: 2, Stride: 2, Data: []float32{1.5, -2}}
	got := writeBlocks(t, "s.npy", m, []int{1}, true)
	if want := string(npyHeader(1, 2)) + "\x00\x00\xc0\x3f\x00\x00\x00\xc0"; string(got) != want {
		t.Errorf("1×2 [1.5 -2]: %q, want %q", got, want)
	}
}

// The .mtx Sink writes "coordinate real general", every element, row by
// row; readMTX reads back the same matrix bit for bit (NaN as NaN).
func TestSinkMTX(t *testing.T) {
	m := randMatrix(5, 23, 17, 20)
	out := writeBlocks(t, "c.mtx", m, []int{3, 0, 1, 11, 100}, true)
	head := "%%MatrixMarket matrix coordinate real general\n% written by glmul (float32)\n23 17 391\n1 1 "
	if !strings.HasPrefix(string(out), head) {
		t.Errorf("starts %q, want %q", out[:min(len(out), len(head))], head)
	}
	back, info, err := readMTX(bytes.NewReader(out), "c.mtx", ReadOptions{})
	if err != nil || info != (ReadInfo{}) || back.Rows != 23 || back.Cols != 17 {
		t.Fatalf("readMTX: %d×%d %+v %v", back.Rows, back.Cols, info, err)
	}
	want := compact(m)
	for k, g := range back.Data {
		if w := want[k]; math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			t.Errorf("element %d: %v, want %v", k, g, w)
		}
	}
}

// Every float32's shortest text ('g', -1, 32) reads back through
// float64, as readMTX reads it, as the same float32: a sample of random
// bit patterns and the edges.
func TestMTXFloat32Text(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bits := []uint32{0, 1, 2, 0x007fffff, 0x00800000, 0x7f7fffff, 0x7f7ffffe, 0x3f800001, 0x80000001}
	for range 300000 {
		bits = append(bits, rng.Uint32())
	}
	var buf []byte
	for _, b := range bits {
		v := math.Float32frombits(b)
		if v != v {
			continue
		}
		buf = strconv.AppendFloat(buf[:0], float64(v), 'g', -1, 32)
		p, err := strconv.ParseFloat(string(buf), 64)
		if math.Float32bits(float32(p)) != b || err != nil {
			t.Errorf("%#x: %s reads back as %#x (%v)", b, buf, math.Float32bits(float32(p)), err)
		}
	}
}

// Too few rows are an error at Close; too many, at WriteRows, which then
// writes nothing of them; a failing writer's error comes back.
func TestSinkRowCount(t *testing.T) {
	m := randMatrix(2, 4, 3, 3)
	for _, path := range []string{"x.npy", "x.mtx"} {
		var out bytes.Buffer
		s, _ := NewSink(&out, path, 4, 3)
		s.WriteRows(blas32.General{Rows: 3, Cols: 3, Stride: 3, Data: m.Data})
		if err := s.Close(); err == nil || !strings.HasPrefix(err.Error(), path+": 3 of the matrix's 4 rows were written") {
			t.Errorf("%s: too few: %v", path, err)
		}
		out.Reset()
		s, _ = NewSink(&out, path, 4, 3)
		s.WriteRows(blas32.General{Rows: 3, Cols: 3, Stride: 3, Data: m.Data})
		err := s.WriteRows(blas32.General{Rows: 2, Cols: 3, Stride: 3, Data: m.Data})
		if err == nil || !strings.HasPrefix(err.Error(), path+": 2 more rows after 3 of a matrix of 4 rows") {
			t.Errorf("%s: too many: %v", path, err)
		}
		s.WriteRows(blas32.General{Rows: 1, Cols: 3, Stride: 3, Data: m.Data[9:]})
		if err := s.Close(); err != nil {
			t.Errorf("%s: %v after the refused rows", path, err)
		}
		whole := writeBlocks(t, path, m, []int{4}, true)
		if !bytes.Equal(out.Bytes(), whole) {
			t.Errorf("%s: the refused rows were written", path)
		}
		s, _ = NewSink(failWriter{}, path, 4, 3)
		s.WriteRows(m)
		if err := s.Close(); !errors.Is(err, errFull) {
			t.Errorf("%s: failing writer: %v", path, err)
		}
	}
	if _, err := NewSink(&bytes.Buffer{}, "x.txt", 1, 1); err == nil || !strings.Contains(err.Error(), "unknown file type") {
		t.Errorf("x.txt: %v", err)
	}
}

// errFull is failWriter's error.
var errFull = errors.New("no space left on device")

// failWriter fails every write.
type failWriter struct{}

// Write fails.
func (failWriter) Write([]byte) (int, error) { return 0, errFull }
