package matfile

import "gonum.org/v1/gonum/blas/blas32"

// tileCols is the width of the blocks in which transpose moves a tile, a
// row at a time: the columns' cache lines it reads from (skewed: see
// readTile) stay in the first-level cache while it writes 512 bytes of
// each row of dst. Measured: 2.5 times as fast as 32×32 blocks.
const tileCols = 128

// readFortran reads rows [r0, r0+dst.Rows) of a Fortran-order file,
// where those rows of column j are contiguous: a tile of columns at a
// time, read into the buffer and converted into a tile of float32s; then
// moved into dst's rows by a blocked transpose, not scattered down dst's
// columns.
func (s *npySource) readFortran(dst blas32.General, r0 int, nw *narrowing) error {
	n := dst.Rows
	k, g, span := s.fortranTile(n)
	for j0 := 0; j0 < s.l.cols; j0 += g {
		gg := min(g, s.l.cols-j0)
		for a := 0; a < n; a += k {
			if err := s.readTile(dst, r0, a, j0, min(k, n-a), gg, span, nw); err != nil {
				return err
			}
		}
	}
	return nil
}

// fortranTile returns the tile readFortran reads for a block of n rows:
// k rows of g columns. span: the columns' segments, n rows each, are read
// at once with the other rows between them (few, or none where n is every
// row), one read a tile; else one read a column of the tile.
func (s *npySource) fortranTile(n int) (k, g int, span bool) {
	l := s.l
	elems := max(1, s.bufLen/l.item)
	seg, col := n*l.item, l.rows*l.item
	switch {
	case n <= elems && col-seg <= max(seg, gapBytes):
		return n, min(l.cols, (elems*l.item-seg)/col+1), true
	case n*min(l.cols, tileCols) <= elems:
		return n, min(l.cols, elems/n), false
	}
	g = min(l.cols, tileCols, elems)
	return elems / g, g, false
}

// readTile reads rows [a, a+k) of the block of rows from r0, columns
// [j0, j0+g), into the buffer, converts them into the tile (for float32
// in the host's byte order, a copy), and transposes the tile into the
// same place in dst.
func (s *npySource) readTile(dst blas32.General, r0, a, j0, k, g int, span bool, nw *narrowing) error {
	l := s.l
	item, col := int64(l.item), int64(l.rows)*int64(l.item)
	seg, pitch := k*l.item, k*l.item // bytes of a column read, and from one to the next
	if span {
		pitch = int(col)
	}
	raw := s.buffer()[:(g-1)*pitch+seg]
	off := l.hdr + (int64(j0)*int64(l.rows)+int64(r0+a))*item
	if span {
		if err := s.readAt(raw, off); err != nil {
			return err
		}
	} else {
		for c := range g {
			if err := s.readAt(raw[c*pitch:c*pitch+seg], off+int64(c)*col); err != nil {
				return err
			}
		}
	}
	// The tile's columns k elements apart, and a cache line more where
	// k is long: k a multiple of 1024 would put the columns transpose
	// reads side by side in one set of the cache, evicting each other.
	tp := k
	if k >= 64 {
		tp += 16
	}
	if need := (g-1)*tp + k; len(s.tile) < need {
		s.tile = make([]float32, need)
	}
	for c := range g {
		src := raw[c*pitch : c*pitch+seg]
		if at := s.decode(s.tile[c*tp:], src, nw); at >= 0 {
			s.overflowAt(nw, r0+a+at, j0+c, src[at*l.item:])
		}
	}
	transpose(dst.Data[a*dst.Stride+j0:], dst.Stride, s.tile, tp, k, g)
	return nil
}

// transpose sets dst[i*stride+c] to src[c*pitch+i] for i < k, c < g, in
// blocks of tileCols columns, each a row at a time.
func transpose(dst []float32, stride int, src []float32, pitch, k, g int) {
	for c0 := 0; c0 < g; c0 += tileCols {
		c1 := min(c0+tileCols, g)
		for i := range k {
			row := dst[i*stride+c0 : i*stride+c1]
			for c := range row {
				row[c] = src[(c0+c)*pitch+i]
			}
		}
	}
}
