package matfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
)

// npyWithDict builds a .npy file of format major.0 around a header
// dictionary written as given, and data.
func npyWithDict(major byte, dict string, data []byte) []byte {
	b := []byte{0x93, 'N', 'U', 'M', 'P', 'Y', major, 0}
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(dict)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(dict)))
	}
	return append(append(b, dict...), data...)
}

// Headers np.load reads (NumPy 1.24, each checked) that npyio refuses or
// that other writers produce: keys in another order, no spaces, double
// quotes, line breaks, tabs and comments, no trailing comma, a comma
// after the last dimension, a key given twice (the last one counts),
// Python 2's long suffix, an underscore in a number, formats 2.0 and 3.0.
func TestReadNPYHeaderForms(t *testing.T) {
	data := floats(binary.LittleEndian, false, 1, 2, 3, 4, 5, 6)
	want := []float32{1, 2, 3, 4, 5, 6}
	for i, c := range []struct {
		dict   string
		majors []byte
	}{
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", []byte{1, 2, 3}},
		{"{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}\n", []byte{1, 2, 3}},
		{"{'descr':'<f4','fortran_order':False,'shape':(2,3)}", []byte{1, 2, 3}},
		{`{"descr": "<f4", "fortran_order": False, "shape": (2, 3,)}` + "\n", []byte{1, 2, 3}},
		{"{\n\t'fortran_order' : False , # C order\n 'descr' : '<f4' ,\n 'shape' : ( 2 , 3 ) ,\n}\n", []byte{1, 2, 3}},
		{"{'descr': '>f8', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }    \n", []byte{1, 2, 3}},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }\n", []byte{1, 2}},
		// A comment ends at \r too: the keys after it count (once read as
		// 3×2 and C order, a wrong result).
		{"{'descr':'<f4','fortran_order':False,'shape':(3,2),#\r'shape':(2,3)\n}", []byte{1, 2, 3}},
		{"{'descr':'<f4','shape':(2,3),'fortran_order':True,#\r'fortran_order':False,\n}", []byte{1, 2, 3}},
		{"{'descr':'<f4','fortran_order':False,'shape':(2,3)#\r}", []byte{1, 2, 3}},
		// u'' and U"" strings (Python 2 writers' unicode), keys and values.
		{"{u'descr': u'<f4', u'fortran_order': False, U\"shape\": (2, 3), }\n", []byte{1, 2, 3}},
	} {
		for _, major := range c.majors {
			name := fmt.Sprintf("form%d-v%d.npy", i, major)
			m, err := readBytes(t, name, npyWithDict(major, c.dict, data))
			if err != nil {
				t.Errorf("%s: %q: %v", name, c.dict, err)
				continue
			}
			if m.Rows != 2 || m.Cols != 3 || fmt.Sprint(m.Data) != fmt.Sprint(want) {
				t.Errorf("%s: %d×%d %v, want 2×3 %v", name, m.Rows, m.Cols, m.Data, want)
			}
		}
	}
	// An underscore between digits is Python's: (1_0, 3) is 10×3.
	m, err := readBytes(t, "underscore.npy", npyWithDict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1_0, 3)}", make([]byte, 120)))
	if err != nil || m.Rows != 10 || m.Cols != 3 {
		t.Errorf("underscore: %v, %d×%d, want 10×3", err, m.Rows, m.Cols)
	}
}

// Headers np.load refuses (NumPy 1.24, each checked), refused with a
// message that says what is wrong.
func TestReadNPYHeaderErrors(t *testing.T) {
	data := floats(binary.LittleEndian, false, 1, 2, 3, 4, 5, 6)
	const ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n"
	for _, c := range []struct {
		name  string
		major byte
		dict  string
		want  string
	}{
		{"not-bool", 1, strings.Replace(ok, "False", "0", 1), "not True or False"},
		{"lower-false", 1, strings.Replace(ok, "False", "false", 1), "not True or False"},
		{"falsey", 1, strings.Replace(ok, "False", "Falsey", 1), "not True or False"},
		{"list-shape", 1, strings.Replace(ok, "(2, 3)", "[2, 3]", 1), "'shape' that is not a tuple"},
		{"int-shape", 1, strings.Replace(ok, "(2, 3)", "(6)", 1), "without its comma"},
		// np.load infers one negative dimension from the file's length;
		// glmul asks for the shape written out.
		{"negative", 1, strings.Replace(ok, "(2, 3)", "(-2, 3)", 1), "non-negative integer"},
		{"minor-version", 1, ok, "its format is 1.1"},
		{"vertical-tab", 1, strings.Replace(ok, "'descr': ", "'descr':\v", 1), "no quoted string"},
		{"not-utf8", 3, strings.Replace(ok, "}", "# caf\xe9\n}", 1), "not UTF-8"},
		{"leading-zero", 1, strings.Replace(ok, "(2, 3)", "(02, 3)", 1), `dimension "02"`},
		{"trailing-underscore", 1, strings.Replace(ok, "(2, 3)", "(2_, 3)", 1), "no ',' or ')'"},
		{"double-comma", 1, strings.Replace(ok, "(2, 3)", "(2,, 3)", 1), "non-negative integer"},
		{"long-in-v3", 3, strings.Replace(ok, "(2, 3)", "(2L, 3L)", 1), "no ',' or ')'"},
		{"missing-key", 1, "{'descr': '<f4', 'fortran_order': False}\n", `no "shape" key`},
		{"extra-key", 1, strings.Replace(ok, "}", "'x': 1}", 1), `the key "x"`},
		{"no-comma", 1, strings.Replace(ok, "'<f4',", "'<f4'", 1), `no ',' or '}' after the value of "descr"`},
		{"after-brace", 1, strings.Replace(ok, "}", "} x", 1), "goes on after its closing '}'"},
		{"unquoted-key", 1, strings.Replace(ok, "'descr'", "descr", 1), "no quoted string"},
		{"open-string", 1, "{'descr': '<f4", "no closing quote"},
		{"structured", 1, strings.Replace(ok, "'<f4'", "[('x', '<f4')]", 1), "structured dtype"},
		{"format4", 4, ok, "its format is 4.0"},
	} {
		file := npyWithDict(c.major, c.dict, data)
		if c.name == "minor-version" {
			file[7] = 1
		}
		_, err := readBytes(t, c.name+".npy", file)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name+".npy") {
			t.Errorf("%s: %v, want an error naming the file and %q", c.name, err, c.want)
		}
	}
	// A header longer than glmul reads, before any of it is read.
	long := npyWithDict(2, ok+strings.Repeat(" ", maxNPYHeader), data)
	if _, err := readBytes(t, "long.npy", long); err == nil || !strings.Contains(err.Error(), "header announces") {
		t.Errorf("long header: %v", err)
	}
}

// The headers NumPy writes, read as npyio reads them: every dtype glmul
// reads, both orders, shapes of one to eleven digits.
func TestNPYHeaderAgreesWithNpyio(t *testing.T) {
	for _, descr := range []string{"<f4", ">f4", "<f8", ">f8", "<i8", "|b1"} {
		for _, fortran := range []bool{false, true} {
			for _, shape := range []string{"(2, 3)", "(1, 70000)", "(12345678901, 7)", "(5,)", "()", "(1, 2, 3)"} {
				file := npyBytes(descr, fortran, shape, nil)
				r, err := npy.NewReader(bytes.NewReader(file))
				if err != nil {
					t.Fatalf("npyio: %s %v %s: %v", descr, fortran, shape, err)
				}
				h, hdr, err := readNPYPrefix(bufio.NewReader(bytes.NewReader(file)), int64(len(file)))
				if err != nil {
					t.Fatalf("%s %v %s: %v", descr, fortran, shape, err)
				}
				if h.descr != r.Header.Descr.Type || h.fortran != r.Header.Descr.Fortran || fmt.Sprint(h.shape) != fmt.Sprint(r.Header.Descr.Shape) || hdr != int64(len(file)) {
					t.Errorf("%s %v %s: %+v (%d bytes), npyio %+v", descr, fortran, shape, h, hdr, r.Header.Descr)
				}
			}
		}
	}
}

// FuzzNPYHeaderDict: any header is parsed or refused, never a panic, and
// what is parsed has the three keys' values (go test -fuzz
// FuzzNPYHeaderDict; the seeds run as a test).
func FuzzNPYHeaderDict(f *testing.F) {
	for _, s := range []string{
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n",
		"{'shape':(2L,3),'descr':\"<f8\",'fortran_order':True # c\n}",
		"{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (), }",
		"{'descr': '\\'', 'fortran_order': False, 'shape': (1_0,), }",
		"{", "", "{'descr", "{'shape': (", "{'shape': (1,", "#",
	} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, long bool) {
		h, err := npyHeaderDict(s, long)
		if err == nil && h.shape == nil {
			t.Errorf("%q: parsed with no shape", s)
		}
	})
}
