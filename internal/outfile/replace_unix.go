//go:build !windows

package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// perm returns the permission bits of t's replacement: a replaced file's
// own, exactly (the umask does not apply); 0644 less the umask for a new
// one.
func (t dest) perm() (fs.FileMode, bool) {
	if t.info != nil && t.info.Mode().IsRegular() {
		return t.info.Mode().Perm(), true
	}
	return 0o644, false
}

// syncDir makes the rename in dir durable. A file system that cannot sync
// a directory (EINVAL) has nothing more to offer and is not an error.
func syncDir(dir string, t dest) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%s: written, but its directory: %w", t, Pathless(err))
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("%s: written, but syncing %s: %w", t, dir, Pathless(err))
	}
	return nil
}
