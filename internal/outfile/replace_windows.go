package outfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// replace writes a regular file atomically on Windows, where renameio
// does not build: a temporary file in the target's directory, flushed and
// closed, then os.Rename, which is MoveFileEx with
// MOVEFILE_REPLACE_EXISTING (one step for readers: they see the old file
// or the new one). The temporary file is removed on failure.
func (t dest) replace(write func(io.Writer) error) error {
	dir := filepath.Dir(t.final)
	f, err := os.CreateTemp(dir, "."+filepath.Base(t.final)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: cannot write in %s: %w", t, dir, Pathless(err))
	}
	tmp := f.Name()
	defer track(tmp)()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := stream(f, t.String(), write); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", t, Pathless(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", t, Pathless(err))
	}
	if err := os.Rename(tmp, t.final); err != nil {
		return fmt.Errorf("%s: %w", t, Pathless(err))
	}
	ok = true
	return nil
}
