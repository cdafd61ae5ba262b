package matfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A .npy file's header, read and written here.
//
// Read here rather than by github.com/sbinet/npyio: npyio (v0.6.0, and
// v0.14.0 at codeberg.org/sbinet/npyio) finds each key by a fixed byte
// pattern ("'descr': ", then "'fortran_order': ", then "'shape': ") and so
// refuses headers that np.load reads: keys in another order, other spacing
// or quotes (files from other writers, or written by hand), and format
// 3.0. It also allocates the length a header announces before checking it
// and panics on some corrupt headers. NumPy reads the dictionary as a
// Python literal (ast.literal_eval in numpy/lib/format.py); npyHeaderDict
// parses the part of Python's literal syntax such a dictionary can hold.
// npyio stays the reference the tests compare with.

// maxNPYHeader is the longest header glmul reads, in bytes: NumPy writes
// about 128 for a matrix, and np.load refuses over 10,000 by default.
const maxNPYHeader = 64 << 10

// npyDict is what a .npy header's dictionary says.
type npyDict struct {
	descr   string // the dtype, as written: "<f4"
	fortran bool   // column-major data
	shape   []int
}

// readNPYPrefix reads a .npy file's magic, version and header from br, of
// a file of size bytes, and returns the parsed header and the number of
// bytes before the data.
func readNPYPrefix(br *bufio.Reader, size int64) (npyDict, int64, error) {
	pre, err := br.Peek(8)
	if err != nil || string(pre[:6]) != "\x93NUMPY" {
		return npyDict{}, 0, fmt.Errorf("not a valid .npy file (no \\x93NUMPY magic)")
	}
	major, minor := pre[6], pre[7]
	if minor != 0 {
		return npyDict{}, 0, fmt.Errorf("not a valid .npy file: its format is %d.%d (NumPy writes 1.0, 2.0 and 3.0)", major, minor)
	}
	var hlen, at int64
	switch major {
	case 1:
		b, err := br.Peek(10)
		if err != nil {
			return npyDict{}, 0, fmt.Errorf("not a valid .npy file (it ends in its header)")
		}
		hlen, at = int64(binary.LittleEndian.Uint16(b[8:])), 10
	case 2, 3:
		b, err := br.Peek(12)
		if err != nil {
			return npyDict{}, 0, fmt.Errorf("not a valid .npy file (it ends in its header)")
		}
		hlen, at = int64(binary.LittleEndian.Uint32(b[8:])), 12
	default:
		return npyDict{}, 0, fmt.Errorf("not a valid .npy file: its format is %d.%d (NumPy writes 1.0, 2.0 and 3.0)", major, minor)
	}
	if at+hlen > size {
		return npyDict{}, 0, fmt.Errorf("not a valid .npy file: its header announces %d bytes, the file holds %d", hlen, size)
	}
	if hlen > maxNPYHeader {
		return npyDict{}, 0, fmt.Errorf("not a .npy file glmul reads: its header announces %d bytes (a matrix's takes about 128; np.load refuses over 10,000 unless told otherwise)", hlen)
	}
	buf := make([]byte, at+hlen)
	if _, err := io.ReadFull(br, buf); err != nil {
		return npyDict{}, 0, fmt.Errorf("not a valid .npy file: reading its header: %w", err)
	}
	// Formats 1.0 and 2.0 hold latin-1 text, 3.0 UTF-8; the keys and
	// values glmul reads are ASCII in both. Other bytes pass in comments
	// and strings; in 3.0 they must be UTF-8, as for np.load.
	if major == 3 && !utf8.Valid(buf[at:]) {
		return npyDict{}, 0, fmt.Errorf("not a valid .npy file: its format 3.0 header is not UTF-8")
	}
	h, err := npyHeaderDict(string(buf[at:]), major < 3)
	if err != nil {
		return npyDict{}, 0, fmt.Errorf("not a valid .npy file: its header %w", err)
	}
	return h, at + hlen, nil
}

// npyHeaderDict parses a .npy header's dictionary: the keys 'descr',
// 'fortran_order' and 'shape', in any order, with any spacing,
// either quote and a trailing comma, as Python's literal syntax allows;
// 'descr' a string (a structured dtype's list is refused), 'fortran_order'
// True or False, 'shape' a tuple of non-negative integers. The header's
// padding (spaces and a newline) may follow, and comments. long: Python
// 2's long suffix L after an integer, which NumPy still reads in formats
// 1.0 and 2.0, is passed over.
func npyHeaderDict(s string, long bool) (npyDict, error) {
	p := &pyLiteral{s: s, long: long}
	var h npyDict
	seen := map[string]bool{}
	if !p.eat('{') {
		return h, p.errorf("does not start with '{'")
	}
	for !p.eat('}') {
		key, err := p.str()
		if err != nil {
			return h, fmt.Errorf("%w (a key: 'descr', 'fortran_order' or 'shape')", err)
		}
		// A key given twice takes its last value, as in Python.
		seen[key] = true
		if !p.eat(':') {
			return h, p.errorf("has no ':' after %q", key)
		}
		switch key {
		case "descr":
			if p.peek() == '[' {
				return h, p.errorf("describes a structured dtype (a list of fields); glmul reads float32 and float64 arrays")
			}
			if h.descr, err = p.str(); err != nil {
				return h, fmt.Errorf("%w ('descr' is a dtype string such as '<f4')", err)
			}
		case "fortran_order":
			if h.fortran, err = p.boolean(); err != nil {
				return h, err
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return h, err
			}
		default:
			return h, p.errorf("holds the key %q; a .npy header holds 'descr', 'fortran_order' and 'shape'", key)
		}
		if !p.eat(',') && p.peek() != '}' {
			return h, p.errorf("has no ',' or '}' after the value of %q", key)
		}
	}
	if p.skip(); p.i != len(p.s) {
		return h, p.errorf("goes on after its closing '}'")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("has no %q key", k)
		}
	}
	return h, nil
}

// pyLiteral reads the Python literals of a .npy header from s, at i.
type pyLiteral struct {
	s    string
	i    int
	long bool // integers may end in L
}

// errorf returns an error naming where in the header it is, and the
// header (its first 200 bytes).
func (p *pyLiteral) errorf(format string, args ...any) error {
	s := strings.TrimRight(p.s, " \n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return fmt.Errorf(format+" (at byte %d of %q)", append(args, p.i, s)...)
}

// skip passes white space and comments.
func (p *pyLiteral) skip() {
	for p.i < len(p.s) {
		switch {
		case strings.IndexByte(" \t\n\r\f", p.s[p.i]) >= 0:
			p.i++
		case p.s[p.i] == '#':
			// A comment ends at a line's end: \n or \r, as in Python (a
			// key after "#...\r" counts).
			if j := strings.IndexAny(p.s[p.i:], "\r\n"); j >= 0 {
				p.i += j
			} else {
				p.i = len(p.s)
			}
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (p *pyLiteral) peek() byte {
	p.skip()
	if p.i == len(p.s) {
		return 0
	}
	return p.s[p.i]
}

// eat passes c, after white space, and reports whether it was there.
func (p *pyLiteral) eat(c byte) bool {
	if p.peek() != c || c == 0 {
		return false
	}
	p.i++
	return true
}

// str reads a string in single or double quotes, with the backslash
// escapes of a plain Python string that a dtype could hold, and Python 3's
// u or U prefix, which means nothing more (u'<f4': a Python 2 writer's
// unicode strings, as some wrote headers).
func (p *pyLiteral) str() (string, error) {
	if c := p.peek(); (c == 'u' || c == 'U') && p.i+1 < len(p.s) && (p.s[p.i+1] == '\'' || p.s[p.i+1] == '"') {
		p.i++
	}
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errorf("has no quoted string where one belongs")
	}
	var b strings.Builder
	for j := p.i + 1; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == q:
			p.i = j + 1
			return b.String(), nil
		case c == '\n' || c == '\r':
			return "", p.errorf("has a string that ends at a line's end")
		case c == '\\' && j+1 < len(p.s) && strings.IndexByte("\\'\"", p.s[j+1]) >= 0:
			j++
			b.WriteByte(p.s[j])
		case c == '\\':
			return "", p.errorf("has a string with an escape glmul does not read")
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("has a string with no closing quote")
}

// boolean reads True or False.
func (p *pyLiteral) boolean() (bool, error) {
	p.skip()
	for _, w := range []struct {
		word string
		v    bool
	}{{"True", true}, {"False", false}} {
		if strings.HasPrefix(p.s[p.i:], w.word) && !isNameByte(p.s, p.i+len(w.word)) {
			p.i += len(w.word)
			return w.v, nil
		}
	}
	return false, p.errorf("has a 'fortran_order' that is not True or False")
}

// tuple reads a tuple of non-negative decimal integers: (), (6,), (2, 3),
// (2, 3,).
func (p *pyLiteral) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, p.errorf("has a 'shape' that is not a tuple such as (2, 3)")
	}
	shape := []int{}
	for !p.eat(')') {
		p.skip()
		j := p.i
		// Digits, with Python's single underscores between them.
		for j < len(p.s) && (isDigit(p.s, j) || p.s[j] == '_' && j > p.i && isDigit(p.s, j+1)) {
			j++
		}
		if j == p.i {
			return nil, p.errorf("has a 'shape' with something other than a non-negative integer")
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(p.s[p.i:j], "_", ""), 10, 64)
		// Python takes 0, 00 and 1_000 but not 01.
		if err != nil || n > 1<<62 || p.s[p.i] == '0' && n != 0 {
			return nil, p.errorf("has a 'shape' with the dimension %q", p.s[p.i:j])
		}
		p.i = j
		if p.long && p.i < len(p.s) && p.s[p.i] == 'L' {
			p.i++
		}
		shape = append(shape, int(n))
		if !p.eat(',') {
			if p.eat(')') {
				if len(shape) == 1 {
					// (6) is the integer 6 in Python, not a tuple.
					return nil, p.errorf("has a 'shape' of one dimension without its comma: (n,)")
				}
				return shape, nil
			}
			return nil, p.errorf("has a 'shape' with no ',' or ')' after a dimension")
		}
	}
	return shape, nil
}

// isDigit reports whether s[i] is a decimal digit.
func isDigit(s string, i int) bool {
	return i < len(s) && s[i] >= '0' && s[i] <= '9'
}

// isNameByte reports whether s[i] continues a Python name.
func isNameByte(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// npyHeader returns the header of a C-order '<f4' .npy array of
// rows×cols, format version 1.0, as NumPy (before 1.23, which pads more)
// writes it: a Python dict literal padded with spaces to a multiple of
// 64 bytes. npyio writes 2-D arrays only from gonum's float64 mat.Dense,
// so it is written here.
func npyHeader(rows, cols int) []byte { return npyHeaderOf("<f4", rows, cols) }

// npyHeaderOf is npyHeader for dtype descr ("<f4", "<f8").
func npyHeaderOf(descr string, rows, cols int) []byte {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }", descr, rows, cols)
	// magic (6) + version (2) + length (2) + dict + '\n': a multiple of 64.
	pad := (64 - (10+len(dict)+1)%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	h := []byte("\x93NUMPY\x01\x00")
	h = binary.LittleEndian.AppendUint16(h, uint16(len(dict)))
	return append(h, dict...)
}
