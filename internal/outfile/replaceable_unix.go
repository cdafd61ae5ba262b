//go:build !windows

package outfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// writable reports (nil) whether this process may write the file at path,
// as the kernel judges it for the effective user (permission bits, ACLs,
// root): a variable so that tests, which run as root, can deny it.
var writable = defaultWritable

func defaultWritable(path string) error {
	return unix.Faccessat(unix.AT_FDCWD, path, unix.W_OK, unix.AT_EACCESS)
}

// geteuid is os.Geteuid, a variable so that tests, which run as root,
// can be another user.
var geteuid = os.Geteuid

// replaceable returns an error where t is an existing file that a rename
// could replace but its owner's wishes or the directory's rules forbid:
// a file this process may not write (a shell's > and NumPy refuse one;
// a rename would replace it, its read-only mode kept, without a word),
// or, in a sticky directory such as /tmp, another user's file (the rename
// fails only after the work). Checked before the work, by Check too.
func (t dest) replaceable() error {
	if t.info == nil || !t.info.Mode().IsRegular() {
		return nil
	}
	if err := writable(t.final); errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		if uid, ok := owner(t.info); ok && uid != geteuid() {
			return fmt.Errorf("%s: may not be written: it belongs to another user (uid %d), and its mode (%v) does not let you write it: name another file",
				t, uid, t.info.Mode().Perm())
		}
		return fmt.Errorf("%s: may not be written (mode %v): make it writable (chmod u+w %s) or name another file",
			t, t.info.Mode().Perm(), t.final)
	}
	dir := filepath.Dir(t.final)
	di, err := os.Stat(dir)
	if err != nil || di.Mode()&os.ModeSticky == 0 {
		return nil
	}
	euid := geteuid()
	fileOwner, ok1 := owner(t.info)
	dirOwner, ok2 := owner(di)
	if ok1 && ok2 && euid != 0 && fileOwner != euid && dirOwner != euid {
		return fmt.Errorf("%s: belongs to another user, in %s, a sticky directory (mode %v), where only its owner may replace it: name another file",
			t, dir, di.Mode())
	}
	return nil
}

// owner returns the user that owns the file fi describes.
func owner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
