package matfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"

	"gonum.org/v1/gonum/blas/blas64"
)

// Float64 matrices, for glmul mul -type f64: read whole (Read64) and
// written whole (Write64), for a product that runs in one piece
// (glcompute.Device.Mul64). float64 values stay what the file holds;
// float32 values are widened, exactly.

// Read64 reads the whole matrix of s, just opened (no ReadRows before),
// as float64: a .npy file's '<f8' or '>f8' data as they are, its '<f4' or
// '>f4' data widened; a .mtx file's values as float64 parses them (one
// beyond float64's range is ±Inf, as NumPy reads it), duplicates summed in
// float64. ReadInfo counts a .mtx file's duplicates; nothing is rounded,
// so it counts no overflow or underflow. A stream must end after the
// matrix, as for ReadRows. The result is row-major, Stride == Cols.
func Read64(s Source) (blas64.General, ReadInfo, error) {
	switch s := s.(type) {
	case *npySource:
		m, err := s.read64()
		return m, ReadInfo{}, err
	case *npyStream:
		m, err := s.read64()
		if err == nil && s.fr != nil {
			err = checkEnd(s.fr.r, s.l, s.name)
		}
		return m, ReadInfo{}, err
	case *mtxSource:
		if s.parsed {
			panic("matfile: Read64 of a .mtx source already read")
		}
		s.r.wide = true
		if err := s.parse(); err != nil {
			return blas64.General{}, ReadInfo{}, err
		}
		return s.m64, s.info, nil
	}
	panic(fmt.Sprintf("matfile: Read64 of a %T", s))
}

// read64 reads the whole matrix as float64: the file's data in one read
// (8-byte items straight into the matrix's memory, then put in the host's
// byte order; 4-byte ones through the buffer, widened), then, for a
// Fortran-order file, transposed into rows.
func (s *npySource) read64() (blas64.General, error) {
	l := s.l
	m := blas64.General{Rows: l.rows, Cols: l.cols, Stride: l.cols, Data: make([]float64, l.n)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r0, s.n = 0, l.rows
	if err := s.checkSize(); err != nil || l.n == 0 {
		return m, err
	}
	data := m.Data // in the file's order
	if l.fortran {
		data = make([]float64, l.n)
	}
	if l.item == 8 {
		if err := s.readAtParallel(float64Bytes(data), l.hdr); err != nil {
			return blas64.General{}, err
		}
		if l.order != hostOrder {
			for i, v := range data {
				data[i] = math.Float64frombits(bits.ReverseBytes64(math.Float64bits(v)))
			}
		}
	} else {
		buf := s.buffer()
		per := len(buf) / 4
		for e := 0; e < len(data); e += per {
			k := min(per, len(data)-e)
			if err := s.readAt(buf[:4*k], l.hdr+4*int64(e)); err != nil {
				return blas64.General{}, err
			}
			for i := range k {
				data[e+i] = float64(math.Float32frombits(l.order.Uint32(buf[4*i:])))
			}
		}
	}
	if l.fortran {
		transpose64(m.Data, data, l.rows, l.cols)
	}
	return m, nil
}

// transpose64 sets dst (rows×cols, row-major) from src (the same matrix
// column-major), in blocks that stay in cache both ways.
func transpose64(dst, src []float64, rows, cols int) {
	const tile = 32
	for j0 := 0; j0 < cols; j0 += tile {
		for i0 := 0; i0 < rows; i0 += tile {
			for j := j0; j < min(j0+tile, cols); j++ {
				col := src[j*rows:]
				for i := i0; i < min(i0+tile, rows); i++ {
					dst[i*cols+j] = col[i]
				}
			}
		}
	}
}

// Write64 writes m to w in the format that path's extension names
// (OutputFormat), as float64: .npy with dtype '<f8', C order; .mtx as
// "coordinate real general" listing every element row by row, each the
// shortest decimal that reads back as the same float64. path is only for
// the format; the caller owns w (outfile, as Write's is).
func Write64(w io.Writer, path string, m blas64.General) error {
	if m.Rows < 0 || m.Cols < 0 || m.Rows > 0 && (m.Stride < m.Cols || len(m.Data) < (m.Rows-1)*m.Stride+m.Cols) {
		panic("matfile: Write64: m's Rows, Stride and Data do not agree")
	}
	format, err := OutputFormat(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, bufSize)
	if format == ".mtx" {
		fmt.Fprintf(bw, "%%%%MatrixMarket matrix coordinate real general\n%% written by glmul (float64)\n%d %d %d\n", m.Rows, m.Cols, int64(m.Rows)*int64(m.Cols))
		var line []byte
		for i := range m.Rows {
			for j, v := range m.Data[i*m.Stride : i*m.Stride+m.Cols] {
				line = strconv.AppendInt(line[:0], int64(i+1), 10)
				line = append(line, ' ')
				line = strconv.AppendInt(line, int64(j+1), 10)
				line = append(line, ' ')
				line = strconv.AppendFloat(line, v, 'g', -1, 64)
				line = append(line, '\n')
				if _, err := bw.Write(line); err != nil {
					return err
				}
			}
		}
		return bw.Flush()
	}
	bw.Write(npyHeaderOf("<f8", m.Rows, m.Cols))
	var item [8]byte
	for i := range m.Rows {
		row := m.Data[i*m.Stride : i*m.Stride+m.Cols]
		if hostOrder == binary.LittleEndian {
			if _, err := bw.Write(float64Bytes(row)); err != nil {
				return err
			}
			continue
		}
		for _, v := range row {
			binary.LittleEndian.PutUint64(item[:], math.Float64bits(v))
			if _, err := bw.Write(item[:]); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
