package matfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
)

// sentinel fills what ReadRows must leave alone: a NaN no file holds.
var sentinel = math.Float32frombits(0x7fc0dead)

// randValues returns n seeded random float64 values of many magnitudes
// and both signs, most not exactly float32; every 41st is below
// float32's smallest subnormal (an underflow).
func randValues(seed uint64, n int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	v := make([]float64, n)
	for k := range v {
		v[k] = (rng.Float64()*2 - 1) * math.Pow(10, float64(rng.IntN(24)-12))
		if k%41 == 40 {
			v[k] = math.Copysign(1e-50*(1+rng.Float64()), v[k])
		}
	}
	return v
}

// npyData encodes vals, a rows×cols row-major matrix, as dtype's data in
// C or Fortran order.
func npyData(dtype string, fortran bool, rows, cols int, vals []float64) []byte {
	order, item, err := npyDtype(dtype)
	if err != nil {
		panic(err)
	}
	data := make([]byte, rows*cols*item)
	for k := range rows * cols {
		i, j := k/cols, k%cols
		if fortran {
			i, j = k%rows, k/rows
		}
		v := vals[i*cols+j]
		if item == 4 {
			order.PutUint32(data[4*k:], math.Float32bits(float32(v)))
		} else {
			order.PutUint64(data[8*k:], math.Float64bits(v))
		}
	}
	return data
}

// writeNPYFile writes vals as a .npy file in dir and returns its path.
func writeNPYFile(t testing.TB, dir, dtype string, fortran bool, rows, cols int, vals []float64) string {
	t.Helper()
	name := fmt.Sprintf("%s-%v-%dx%d.npy", strings.NewReplacer("<", "le", ">", "be").Replace(dtype), fortran, rows, cols)
	path := filepath.Join(dir, name)
	file := npyBytes(dtype, fortran, fmt.Sprintf("(%d, %d)", rows, cols), npyData(dtype, fortran, rows, cols, vals))
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// block is rows [r0, r0+n).
type block struct{ r0, n int }

// blocksOf returns blocks for ReadRows to read, covering all rows of a
// rows-row matrix: the whole, single rows, blocks out of order (the last
// one partial) and some twice.
func blocksOf(rows int) []block {
	bs := []block{{0, rows}, {0, 1}, {rows - 1, 1}, {rows / 2, 1}}
	size := rows/3 + 1
	var tiles []block
	for r0 := 0; r0 < rows; r0 += size {
		tiles = append(tiles, block{r0, min(size, rows-r0)})
	}
	for k := len(tiles) - 1; k >= 0; k-- { // backwards
		bs = append(bs, tiles[k])
	}
	bs = append(bs, tiles[len(tiles)-1], tiles[0])
	if rows > 2 {
		bs = append(bs, block{1, rows - 2})
	}
	return bs
}

// readVariant changes how an npySource reads, to take every path.
type readVariant struct {
	name   string
	bufLen func(item int) int // 0: the default
	direct bool               // false: convert even float32 in host order
}

// readVariants are the ways TestReadRowsNPY reads each file.
var readVariants = []readVariant{
	{"default", nil, true},
	{"converted", nil, false},
	{"small-buffer", func(item int) int { return 5*item + 3 }, true},
	{"one-item-buffer", func(item int) int { return item }, false},
}

// checkRows checks that dst holds rows [r0, r0+dst.Rows) of want (a
// row-major matrix of dst.Cols columns) bit for bit, and the sentinel
// everywhere else in dst.Data.
func checkRows(t *testing.T, what string, dst blas32.General, r0 int, want []float32) {
	t.Helper()
	bad := 0
	for k, g := range dst.Data {
		i, j := k/dst.Stride, k%dst.Stride
		w := sentinel
		if i < dst.Rows && j < dst.Cols {
			w = want[(r0+i)*dst.Cols+j]
		}
		if math.Float32bits(g) != math.Float32bits(w) {
			if bad++; bad <= 3 {
				t.Errorf("%s: rows from %d: Data[%d] (row %d, col %d) = %v (%#x), want %v (%#x)", what, r0, k, i, j, g, math.Float32bits(g), w, math.Float32bits(w))
			}
		}
	}
}

// newDst returns a rows×cols matrix of stride, with a row's worth more
// Data beyond its last row, all the sentinel.
func newDst(rows, cols, stride int) blas32.General {
	d := make([]float32, rows*stride+cols)
	for k := range d {
		d[k] = sentinel
	}
	return blas32.General{Rows: rows, Cols: cols, Stride: stride, Data: d}
}

// Every dtype and order, through every read path, for blocks of rows in
// any order and more than once, into dst of any stride: the rows of the
// matrix written, bit for bit (float64 rounded as Go rounds), what
// ReadWith reads, and the padding untouched; Info counts each row once.
func TestReadRowsNPY(t *testing.T) {
	dir := t.TempDir()
	shapes := []struct{ rows, cols int }{{37, 23}, {1200, 5}, {3, 16400}, {1, 1}}
	for si, sh := range shapes {
		vals := randValues(uint64(si), sh.rows*sh.cols)
		for _, dtype := range []string{"<f4", ">f4", "<f8", ">f8"} {
			want := make([]float32, len(vals))
			for k, v := range vals {
				want[k] = float32(v)
			}
			for _, fortran := range []bool{false, true} {
				path := writeNPYFile(t, dir, dtype, fortran, sh.rows, sh.cols, vals)
				ref, refInfo, err := ReadWith(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, path+" ReadWith", ref, 0, want)
				if dtype[2] == '8' && refInfo.Underflows != len(vals)/41 {
					t.Errorf("%s: ReadWith: %+v, want %d underflows", path, refInfo, len(vals)/41)
				}
				for _, v := range readVariants {
					if v.bufLen != nil && len(vals) > 10000 {
						continue // reads of a few elements: slow, and no path more
					}
					readBlocks(t, path, v, sh.rows, sh.cols, want, refInfo)
				}
			}
		}
	}
}

// readBlocks reads path's blocks through variant v into dst of two
// strides and checks them against want, and Info against ReadWith's.
func readBlocks(t *testing.T, path string, v readVariant, rows, cols int, want []float32, info ReadInfo) {
	t.Helper()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ns := s.(*npySource)
	ns.direct = ns.direct && v.direct
	if v.bufLen != nil {
		ns.bufLen = v.bufLen(ns.l.item)
	}
	if s.Rows() != rows || s.Cols() != cols {
		t.Fatalf("%s: %d×%d, want %d×%d", path, s.Rows(), s.Cols(), rows, cols)
	}
	for _, stride := range []int{cols, cols + 3} {
		for _, b := range blocksOf(rows) {
			dst := newDst(b.n, cols, stride)
			if err := s.ReadRows(dst, b.r0); err != nil {
				t.Fatalf("%s %s: rows %d+%d: %v", path, v.name, b.r0, b.n, err)
			}
			checkRows(t, fmt.Sprintf("%s %s stride %d", filepath.Base(path), v.name, stride), dst, b.r0, want)
		}
	}
	if got := s.Info(); got != info {
		t.Errorf("%s %s: Info %+v after reading every row (some twice), want %+v", path, v.name, got, info)
	}
}

// A .mtx Source copies rows of the matrix parsed at Open.
func TestReadRowsMTX(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.mtx")
	text := "%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1.5\n3 2 -2.25\n1 1 2\n2 1 7e-3\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{3.5, 0, 7e-3, 0, 0, -2.25}
	for _, b := range blocksOf(3) {
		dst := newDst(b.n, 2, 5)
		if err := s.ReadRows(dst, b.r0); err != nil {
			t.Fatal(err)
		}
		checkRows(t, "d.mtx", dst, b.r0, want)
	}
	if info := s.Info(); info.Duplicates != 1 {
		t.Errorf("Info %+v, want 1 duplicate", info)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

// TestMTXParsedAtFirstRead: Open reads a .mtx file's header only: a
// body that is wrong opens, with the header's shape, and every ReadRows
// returns the parse's error, naming the line; Close after that is fine,
// and a file closed unread is not read.
func TestMTXParsedAtFirstRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.mtx")
	text := "%%MatrixMarket matrix coordinate real general\n3 2 2\n1 1 1.5\n4 1 2\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, nil)
	if err != nil || s.Rows() != 3 || s.Cols() != 2 {
		t.Fatalf("Open: %v", err)
	}
	for range 2 {
		if err := s.ReadRows(newDst(1, 2, 2), 0); err == nil || !strings.Contains(err.Error(), "bad.mtx:4:") {
			t.Errorf("ReadRows of a file with row 4 of 3: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if s, err = Open(path, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := s.ReadRows(newDst(1, 2, 2), 0); err == nil {
		t.Error("ReadRows after Close: no error")
	}
}

// A file that shrinks or grows after Open is an error naming it at the
// next ReadRows, even for rows that it still holds: its data are no
// longer what the header described (np.save truncates and rewrites).
func TestReadRowsChangedFile(t *testing.T) {
	vals := randValues(9, 10*6)
	for _, c := range []struct {
		dtype   string
		fortran bool
		change  int64 // bytes added (or, negative, cut)
		want    string
	}{
		{"<f4", false, -5, "the file shrank from"},
		{">f8", true, -48, "the file shrank from"},
		{"<f4", true, 16, "the file grew from"},
		{"<f8", false, 1, "the file grew from"},
	} {
		path := writeNPYFile(t, t.TempDir(), c.dtype, c.fortran, 10, 6, vals)
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReadRows(newDst(2, 6, 6), 0); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		if c.change < 0 {
			err = os.Truncate(path, fi.Size()+c.change)
		} else {
			var f *os.File
			if f, err = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0); err == nil {
				f.Write(make([]byte, c.change))
				err = f.Close()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []block{{8, 2}, {0, 2}} {
			err := s.ReadRows(newDst(b.n, 6, 6), b.r0)
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "is it still being written?") {
				t.Errorf("%s %v %+d bytes, rows %d+%d: %v, want an error naming the file and %q", c.dtype, c.fortran, c.change, b.r0, b.n, err, c.want)
			}
		}
		s.Close()
	}
}

// A read of a block that stops short (the file cut between the size
// check and the read) says where the file ended, or what failed.
func TestReadRowsShortRead(t *testing.T) {
	diskErr := errors.New("input/output error")
	f4 := npyBytes("<f4", false, "(2, 3)", floats(binary.LittleEndian, false, 1, 2, 3, 4, 5, 6))
	f8 := npyBytes(">f8", true, "(2, 3)", npyData(">f8", true, 2, 3, []float64{1, 2, 3, 4, 5, 6}))
	for _, c := range []struct {
		name string
		file []byte
		keep int // bytes of data that remain
		err  error
		b    block
		want string
	}{
		{"f4-row-1", f4, 12, io.EOF, block{1, 1}, "a.npy: reading rows 1 to 1 of 2×3 <f4: the file ended 12 bytes into its data (after 3 of its 6 elements), which held 24 bytes when it was opened (is it still being written?)"},
		{"f4-disk", f4, 14, diskErr, block{1, 1}, "a.npy: reading rows 1 to 1 of 2×3 <f4, 14 bytes into its data: input/output error"},
		// Row 0 is within the 40 bytes left: it reads (below).
		{"f8-fortran-row-1", f8, 40, io.EOF, block{1, 1}, "a.npy: reading rows 1 to 1 of 2×3 >f8: the file ended 40 bytes into its data (after 5 of its 6 elements)"},
	} {
		hdr := len(c.file) - map[bool]int{true: 48, false: 24}[c.name[:2] == "f8"]
		s, err := newNPYSource(nil, &shortReader{b: c.file[:hdr+c.keep], err: c.err}, int64(len(c.file)), "a.npy", ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = s.ReadRows(newDst(c.b.n, 3, 3), c.b.r0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if c.err != io.EOF && !errors.Is(err, c.err) {
			t.Errorf("%s: %v does not wrap %v", c.name, err, c.err)
		}
	}
	s, _ := newNPYSource(nil, &shortReader{b: f8[:len(f8)-8], err: io.EOF}, int64(len(f8)), "a.npy", ReadOptions{})
	if dst := newDst(1, 3, 3); s.ReadRows(dst, 0) != nil || fmt.Sprint(dst.Data[:3]) != "[1 2 3]" {
		t.Errorf("f8-fortran-row-0: %v, want [1 2 3]", dst.Data[:3])
	}
}

// float64 values beyond float32's range, read by blocks: an error
// (ErrOverflow) naming the first in the block and counting the block's,
// only for blocks that hold one; with AllowOverflow, ±Inf, counted once
// however often their rows are read.
func TestReadRowsOverflow(t *testing.T) {
	vals := randValues(3, 6*4) // an underflow at [2, 0] (k = 8)... and 40
	vals[8] = 1e-60
	vals[4*4+1], vals[4*4+3], vals[5*4+0] = 1e39, -5e300, 3e38 // 3e38 fits
	for _, fortran := range []bool{false, true} {
		path := writeNPYFile(t, t.TempDir(), "<f8", fortran, 6, 4, vals)
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReadRows(newDst(4, 4, 4), 0); err != nil {
			t.Errorf("fortran %v: rows 0 to 3: %v", fortran, err)
		}
		err = s.ReadRows(newDst(3, 4, 7), 3)
		want := path + ": element [4, 1] (row, column from 0, as NumPy indexes) is 1e+39, beyond float32's range (largest magnitude 3.4028235e+38): it would become +Inf in float32 (2 such values in rows 3 to 5)"
		if !errors.Is(err, ErrOverflow) || err.Error() != want {
			t.Errorf("fortran %v: rows 3 to 5: %v, want ErrOverflow:\n%s", fortran, err, want)
		}
		if err := s.ReadRows(newDst(1, 4, 4), 5); err != nil {
			t.Errorf("fortran %v: row 5: %v", fortran, err)
		}
		if info := s.Info(); info != (ReadInfo{Underflows: 1}) {
			t.Errorf("fortran %v: Info %+v, want 1 underflow (the failed block not counted)", fortran, info)
		}
		s.Close()

		s, err = Open(path, &ReadOptions{AllowOverflow: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []block{{4, 1}, {3, 3}, {0, 6}, {4, 2}} {
			dst := newDst(b.n, 4, 4)
			if err := s.ReadRows(dst, b.r0); err != nil {
				t.Fatalf("fortran %v allowed: %v", fortran, err)
			}
			if r := 4 - b.r0; r < b.n && (dst.Data[r*4+1] != float32(math.Inf(1)) || dst.Data[r*4+3] != float32(math.Inf(-1))) {
				t.Errorf("fortran %v allowed: row 4 = %v, want +Inf at 1, -Inf at 3", fortran, dst.Data[r*4:r*4+4])
			}
		}
		if info := s.Info(); info != (ReadInfo{Overflows: 2, Underflows: 1}) {
			t.Errorf("fortran %v allowed: Info %+v, want 2 overflows, 1 underflow", fortran, info)
		}
		s.Close()
	}
}

// A dst that does not fit the matrix is a programmer error: a panic.
func TestReadRowsPanics(t *testing.T) {
	path := writeNPYFile(t, t.TempDir(), "<f4", false, 4, 3, randValues(1, 12))
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name string
		dst  blas32.General
		r0   int
	}{
		{"cols", newDst(1, 2, 2), 0},
		{"past-end", newDst(2, 3, 3), 3},
		{"negative", newDst(1, 3, 3), -1},
		{"stride", blas32.General{Rows: 2, Cols: 3, Stride: 2, Data: make([]float32, 9)}, 0},
		{"short-data", blas32.General{Rows: 2, Cols: 3, Stride: 4, Data: make([]float32, 6)}, 0},
	} {
		func() {
			defer func() {
				if p := recover(); p == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			s.ReadRows(c.dst, c.r0)
		}()
	}
}

// The set of rows read: pieces in and out of it, and merging.
func TestSpans(t *testing.T) {
	var s spans
	s.add(10, 20)
	s.add(30, 40)
	s.add(20, 25) // touches: merges
	if fmt.Sprint(s) != "[{10 25 false} {30 40 false}]" {
		t.Errorf("spans %v", s)
	}
	got := fmt.Sprint(s.split(5, 35))
	if want := "[{5 10 false} {10 25 true} {25 30 false} {30 35 true}]"; got != want {
		t.Errorf("split %v, want %v", got, want)
	}
	s.add(0, 50)
	if fmt.Sprint(s) != "[{0 50 false}]" || fmt.Sprint(s.split(45, 50)) != "[{45 50 true}]" {
		t.Errorf("spans %v", s)
	}
}

// TestReadRowsParallel: a float32 block large enough to be read in
// parallel pieces (readAtParallel) arrives whole and in place, and a file
// cut inside a later piece fails with the first place it ended.
func TestReadRowsParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	rows, cols := 9000, 1024 // 36.9 MB: four pieces
	data := make([]byte, 4*rows*cols)
	for i := range rows * cols {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i%8191)-4095.5))
	}
	file := npyBytes("<f4", false, fmt.Sprintf("(%d, %d)", rows, cols), data)
	hdr := len(file) - len(data)
	s, err := newNPYSource(nil, &shortReader{b: file, err: io.EOF}, int64(len(file)), "big.npy", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dst := blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float32, rows*cols)}
	if err := s.ReadRows(dst, 0); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst.Data {
		if want := float32(i%8191) - 4095.5; v != want {
			t.Fatalf("element %d: %v, want %v", i, v, want)
		}
	}
	keep := 3*len(data)/5 + 12 // inside the third of four pieces
	s, err = newNPYSource(nil, &shortReader{b: file[:hdr+keep], err: io.EOF}, int64(len(file)), "big.npy", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the file ended %d bytes into its data", keep)
	if err := s.ReadRows(dst, 0); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("cut at %d bytes: %v, want %q", keep, err, want)
	}
}
