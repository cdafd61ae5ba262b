package outfile

import "fmt"

// replaceable returns an error where t is an existing file marked
// read-only: a rename would replace it without a word, where a shell's >
// and NumPy refuse it. Checked before the work, by Check too.
func (t dest) replaceable() error {
	if t.info == nil || !t.info.Mode().IsRegular() || t.info.Mode().Perm()&0o200 != 0 {
		return nil
	}
	return fmt.Errorf("%s: is read-only: clear its read-only attribute (attrib -r %s) or name another file", t, t.final)
}
