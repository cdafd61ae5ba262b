//go:build !windows

package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/google/renameio/v2"
)

// replace writes a regular file atomically. renameio does the part it is
// good at: a temporary file opened with O_EXCL, the existing file's
// permission bits, fsync, rename, and removal on failure. What it does not
// do is ours: following links (it would rename over the link itself) and
// telling devices apart (it would replace them). Its temporary directory
// is named, the target's own: by default it may pick $TMPDIR.
func (t dest) replace(write func(io.Writer) error) error {
	dir := filepath.Dir(t.final)
	pf, err := renameio.NewPendingFile(t.final, renameio.WithTempDir(dir),
		renameio.WithPermissions(0o644), renameio.WithExistingPermissions())
	if err != nil {
		return fmt.Errorf("%s: cannot write in %s: %w", t, dir, Pathless(err))
	}
	defer pf.Cleanup()
	defer track(pf.Name())()
	if err := stream(pf, t.String(), write); err != nil {
		return err
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("%s: %w", t, Pathless(err))
	}
	return syncDir(dir, t)
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
