package outfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"
)

// replace writes a regular file atomically: a temporary file in the
// target's directory (never $TMPDIR: the rename must not cross file
// systems), opened with O_EXCL, synced, renamed over the target, then the
// directory synced. A replaced file's permission bits are kept. The
// temporary file is removed on failure.
func (t dest) replace(write func(io.Writer) error) error {
	dir := filepath.Dir(t.final)
	perm, exact := t.perm()
	f, err := createTemp(dir, filepath.Base(t.final), perm, exact)
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
	return syncDir(dir, t)
}

// keptBase is how many bytes of the target's name a temporary file's name
// keeps at most, so that the whole name (a dot, these bytes, a hash, a
// random suffix) stays well under NAME_MAX (255 bytes; Windows' 255
// UTF-16 units are at least as many): a target named with 255 bytes must
// not fail for its temporary file's name.
const keptBase = 160

// tempPrefix returns the start of a temporary file's name for a target
// named base: ".base" for a short name; for a long one, its first bytes
// (whole UTF-8 characters) and a hash of the whole name, so that a file
// left by a crash still says whose it was.
func tempPrefix(base string) string {
	if len(base) <= keptBase {
		return "." + base + ".tmp"
	}
	cut := 100
	for cut > 0 && !utf8.RuneStart(base[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(base))
	return "." + base[:cut] + "~" + hex.EncodeToString(sum[:8]) + ".tmp"
}

// createTemp creates a new file in dir, named for the target base with a
// random suffix, with perm: less the umask, or exactly if exact is set.
func createTemp(dir, base string, perm fs.FileMode, exact bool) (*os.File, error) {
	prefix := filepath.Join(dir, tempPrefix(base))
	for range 100 {
		name := prefix + strconv.FormatUint(rand.Uint64(), 36)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := chmodExact(f, perm, exact); err != nil {
			f.Close()
			os.Remove(name)
			return nil, err
		}
		return f, nil
	}
	return nil, fmt.Errorf("no free temporary name %s*: %w", prefix, fs.ErrExist)
}

// chmodExact gives f the mode perm if exact is set and the umask took
// bits away.
func chmodExact(f *os.File, perm fs.FileMode, exact bool) error {
	if !exact {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode().Perm() == perm {
		return err
	}
	return f.Chmod(perm)
}
