package matfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"gonum.org/v1/gonum/blas/blas32"
)

// Stdin is the path that names standard input.
const Stdin = "-"

// IsStream reports whether path is read as a stream, once and in order,
// not with positioned reads: "-" (standard input, whatever it is), or a
// FIFO, character device or socket (/dev/stdin from a pipe, a shell's
// <(...)).
func IsStream(path string) bool {
	if path == Stdin {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice|os.ModeSocket) != 0
}

// InputFormat is Format for a file to be read: "" with no error for a
// stream named without .npy or .mtx ("-", /dev/fd/63), whose format
// its first bytes tell when it is opened.
func InputFormat(path string) (string, error) {
	format, err := Format(path)
	if err != nil && IsStream(path) {
		return "", nil
	}
	return format, err
}

// StreamName is how messages name path: "standard input" for "-".
func StreamName(path string) string {
	if path == Stdin {
		return "standard input"
	}
	return path
}

// maxStreamFortran bounds a Fortran-order .npy read from a stream, which
// is read whole into memory (its rows are not contiguous): 2^28 elements,
// the dense bound of a .mtx file too.
const maxStreamFortran = maxMTXElements

// openStream opens the stream path (IsStream): .npy or .mtx by its name's
// extension, else by its first bytes. Its rows must then be read once,
// in order (ReadRows returns an error otherwise); a .mtx stream, or a
// Fortran-order .npy one, is read whole at the first ReadRows, or at
// Open.
func openStream(path string, o ReadOptions) (Source, error) {
	name := StreamName(path)
	var in io.Reader = os.Stdin
	var f io.Closer // nil: standard input stays open
	if path != Stdin {
		file, err := os.Open(path)
		if err != nil {
			return nil, pathFirst(path, err)
		}
		in, f = file, file
	}
	s, err := readStream(bufio.NewReaderSize(in, bufSize), f, path, name, o)
	if err != nil && f != nil {
		f.Close()
	}
	return s, err
}

// readStream reads the header of the stream in br, named name; f is
// closed with the Source.
func readStream(br *bufio.Reader, f io.Closer, path, name string, o ReadOptions) (Source, error) {
	format, _ := Format(path)
	if format == "" {
		var err error
		if format, err = sniff(br, name); err != nil {
			return nil, err
		}
	}
	if format == ".mtx" {
		return openMTX(br, f, name, o)
	}
	h, hdr, err := readNPYPrefix(br, math.MaxInt64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l, err := checkNPYHeader(h, hdr, -1, name)
	if err != nil {
		return nil, err
	}
	if l.fortran {
		return readFortranStream(br, f, l, name, o)
	}
	fr := &forwardReader{r: br, pos: l.hdr}
	s := npySourceOf(l, fr, name, o)
	s.stream = true
	return &npyStream{npySource: s, fr: fr, c: f}, nil
}

// sniff tells a stream's format by its first bytes: .npy's magic, or a
// MatrixMarket banner (after a UTF-8 byte-order mark, if any).
func sniff(br *bufio.Reader, name string) (string, error) {
	const banner = "%%matrixmarket"
	b, err := br.Peek(len("\ufeff") + len(banner))
	switch {
	case bytes.HasPrefix(b, []byte("\x93NUMPY")):
		return ".npy", nil
	case strings.HasPrefix(strings.ToLower(strings.TrimPrefix(string(b), "\ufeff")), banner):
		return ".mtx", nil
	case len(b) == 0 && errors.Is(err, io.EOF):
		return "", fmt.Errorf("%s: empty: no matrix was written to it", name)
	case len(b) == 0:
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return "", fmt.Errorf("%s: neither a .npy file (which starts with \\x93NUMPY) nor a MatrixMarket file (which starts with %%%%MatrixMarket)", name)
}

// readFortranStream reads a Fortran-order .npy stream's data whole into
// memory, where its rows can be read: each is spread over the whole data.
func readFortranStream(br *bufio.Reader, f io.Closer, l npyLayout, name string, o ReadOptions) (Source, error) {
	if l.n > maxStreamFortran {
		return nil, fmt.Errorf("%s: a %d×%d Fortran-order .npy from a stream is read whole into memory, which glmul does up to %d elements: save it to a file, or in C order (np.ascontiguousarray)",
			name, l.rows, l.cols, maxStreamFortran)
	}
	data := make([]byte, l.hdr+l.n*int64(l.item)) // the header's bytes stay zeros: data is read at its offsets
	s := npySourceOf(l, bytes.NewReader(data), name, o)
	s.stream, s.r0, s.n = true, 0, l.rows
	if k, err := io.ReadFull(br, data[l.hdr:]); err != nil {
		return nil, s.shortRead(l.hdr+int64(k), err)
	}
	if err := checkEnd(br, l, name); err != nil {
		return nil, err
	}
	return &npyStream{npySource: s, c: f}, nil
}

// checkEnd returns an error unless the stream in br ends where the data
// its header announces (l) end.
func checkEnd(br *bufio.Reader, l npyLayout, name string) error {
	switch _, err := br.Peek(1); {
	case err == nil:
		return fmt.Errorf("%s: the stream goes on after the %d×%d %s its header announces", name, l.rows, l.cols, l.dtype)
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// npyStream is a .npy matrix read from a stream.
type npyStream struct {
	*npySource
	fr *forwardReader // nil where the data were read whole (Fortran order)
	c  io.Closer      // nil for standard input
}

// ReadRows reads rows [r0, r0+dst.Rows) into dst: after those read
// before, in order. After the last row, the stream must end.
func (s *npyStream) ReadRows(dst blas32.General, r0 int) error {
	if err := s.npySource.ReadRows(dst, r0); err != nil {
		return err
	}
	// The last rows read, or the empty read of a matrix without rows.
	if s.fr != nil && r0+dst.Rows == s.l.rows && (dst.Rows > 0 || s.l.rows == 0) {
		return checkEnd(s.fr.r, s.l, s.name)
	}
	return nil
}

// Close closes the stream's file, if any.
func (s *npyStream) Close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}

// forwardReader is a stream as an io.ReaderAt that reads forward only:
// at pos or after it (skipping the bytes between), never before.
type forwardReader struct {
	r   *bufio.Reader
	pos int64 // the offset of r's next byte
}

// ReadAt reads len(p) bytes at off, off >= the end of the last read.
func (fr *forwardReader) ReadAt(p []byte, off int64) (int, error) {
	if off < fr.pos {
		return 0, fmt.Errorf("a stream is read once, in order: byte %d was asked after byte %d", off, fr.pos)
	}
	if off > fr.pos {
		k, err := fr.r.Discard(int(off - fr.pos))
		fr.pos += int64(k)
		if err != nil {
			return 0, err
		}
	}
	k, err := io.ReadFull(fr.r, p)
	fr.pos += int64(k)
	return k, err
}
