package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Stdout is the path that names standard output.
const Stdout = "-"

// maxLinks is how many symbolic links a path may pass through, as Linux's
// own limit (ELOOP after 40).
const maxLinks = 40

// Write writes data to path (see the package documentation for what a
// path means); stdout receives it when path is "-".
func Write(path string, stdout io.Writer, data []byte) error {
	return WriteWith(path, stdout, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith calls write once with a writer to path (see the package
// documentation for what a path means); stdout is that writer when path
// is "-". write may write in as many pieces as it likes. A regular file
// is replaced only if write returns nil and every write succeeded; its
// first write error is returned even if write dropped it.
func WriteWith(path string, stdout io.Writer, write func(io.Writer) error) error {
	return WriteSized(path, stdout, 0, write)
}

// ErrNoRoom is the error, wrapped, of WriteSized for a file larger than
// the free space where it would be written.
var ErrNoRoom = errors.New("not enough free space")

// WriteSized is WriteWith for a write of at least size bytes: a file that
// would be replaced is refused with ErrNoRoom before write is called if
// its file system has less free space (Room), so that long work is not
// done for a file that cannot be kept. A device, a FIFO or "-" is written
// whatever the size.
func WriteSized(path string, stdout io.Writer, size uint64, write func(io.Writer) error) error {
	if path == Stdout {
		if stdout == nil {
			return errors.New("-: standard output cannot take this file; name a file")
		}
		return stream(stdout, "standard output", write)
	}
	t, err := resolve(path)
	if err != nil {
		return err
	}
	inPlace, err := t.classify()
	switch {
	case err != nil:
		return err
	case inPlace:
		return t.writeInPlace(write)
	}
	if err := t.replaceable(); err != nil {
		return err
	}
	if err := t.room(size); err != nil {
		return err
	}
	return t.replace(write)
}

// room returns ErrNoRoom, wrapped, where t's directory's file system has
// less than size bytes free.
func (t dest) room(size uint64) error {
	dir, err := t.dir()
	if err != nil {
		return err
	}
	if room, ok := freeBytes(dir); ok && size > room {
		return fmt.Errorf("%s: %w: at least %s to write, %s free there", t, ErrNoRoom, gib(size), gib(room))
	}
	return nil
}

// CheckSized is Check for a write of at least size bytes: a file that
// would be replaced is also refused, with ErrNoRoom, where its file
// system has less free space, as WriteSized will refuse it. For a command
// to call before it opens what the work needs (a GPU), so that a file
// that cannot be kept fails first.
func CheckSized(path string, size uint64) error {
	t, replaced, err := check(path)
	if err != nil || !replaced {
		return err
	}
	return t.room(size)
}

// Check returns an error unless WriteWith could write path, writing
// nothing: for a command to call before long work, so that the work is not
// lost at the end. A regular file's or a new path's directory must exist
// and take a new file; a device or FIFO is not opened (a FIFO would wait
// for its reader), so a permission error there shows only when written.
// "-" passes: whether there is a stdout is the caller's to know.
func Check(path string) error {
	_, _, err := check(path)
	return err
}

// check is Check, also returning where path leads and whether a new file
// would replace it there (not for "-" or a file written in place).
func check(path string) (t dest, replaced bool, err error) {
	if path == Stdout {
		return t, false, nil
	}
	if t, err = resolve(path); err != nil {
		return t, false, err
	}
	if inPlace, err := t.classify(); err != nil || inPlace {
		return t, false, err
	}
	if err := t.replaceable(); err != nil {
		return t, false, err
	}
	dir, err := t.dir()
	if err != nil {
		return t, false, err
	}
	f, err := os.CreateTemp(dir, ".glmul-outfile-check-*")
	if err != nil {
		return t, false, fmt.Errorf("%s: cannot write in %s: %w", t, dir, Pathless(err))
	}
	f.Close()
	os.Remove(f.Name())
	return t, true, nil
}

// InPlace reports whether path is written in place, not replaced: a
// device or a FIFO, or a link to one (see the package documentation).
func InPlace(path string) bool {
	t, err := resolve(path)
	if err != nil {
		return false
	}
	inPlace, err := t.classify()
	return err == nil && inPlace
}

// dest is a path the caller gave and where its links lead.
type dest struct {
	path  string      // as the caller gave it
	final string      // path with every link followed; path if none
	info  fs.FileInfo // final's Lstat; nil if it does not exist
}

// String names the path for errors: "link.npy (a link to /data/c.npy)".
func (t dest) String() string {
	if t.final == t.path {
		return t.path
	}
	return fmt.Sprintf("%s (a link to %s)", t.path, t.final)
}

// resolve follows path's symbolic links to the file they name, which may
// not exist. Only the last element is followed: links among the
// directories above it are resolved by the kernel, and the rename that
// replaces a file works through them.
func resolve(path string) (dest, error) {
	t := dest{path: path, final: path}
	if path == "" {
		return t, errors.New("no file named (the path is empty)")
	}
	// A device, FIFO or socket, through whatever links: written in place
	// through path itself. Linux's /proc/self/fd links (/dev/stdout) name
	// a pipe as "pipe:[N]", no path to follow by hand, yet open follows
	// them.
	if fi, err := os.Stat(path); err == nil && fi.Mode()&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		t.info = fi
		return t, nil
	}
	for range maxLinks {
		fi, err := os.Lstat(t.final)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return t, nil
		case err != nil:
			return t, fmt.Errorf("%s: %w", t, Pathless(err))
		case fi.Mode()&fs.ModeSymlink == 0:
			t.info = fi
			return t, nil
		}
		link, err := os.Readlink(t.final)
		if err != nil {
			return t, fmt.Errorf("%s: %w", t, Pathless(err))
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(t.final), link)
		}
		t.final = link
	}
	return t, fmt.Errorf("%s: more than %d symbolic links (a loop?)", t.path, maxLinks)
}

// dir returns the directory a replacement of t is written in, or an
// error that says it does not exist.
func (t dest) dir() (string, error) {
	dir := filepath.Dir(t.final)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s: there is no directory %s", t, dir)
	}
	return dir, nil
}

// classify says whether t is written in place (a device or a FIFO) or
// replaced (a regular file or nothing yet), or why it cannot be written.
func (t dest) classify() (inPlace bool, err error) {
	if t.info == nil {
		return false, nil
	}
	switch m := t.info.Mode(); {
	case m.IsRegular():
		return false, nil
	case m.IsDir():
		return false, fmt.Errorf("%s: is a directory; name a file in it (%s) or another path",
			t, filepath.Join(t.path, "FILE"))
	case m&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe) != 0:
		return true, nil
	case m&fs.ModeSocket != 0:
		return false, fmt.Errorf("%s: is a socket; glmul writes regular files, devices and FIFOs", t)
	}
	return false, fmt.Errorf("%s: is not a regular file, device or FIFO (mode %v)", t, t.info.Mode())
}

// writeInPlace writes a device or FIFO through an ordinary open: no
// O_CREATE (it exists), no O_TRUNC (a device is not a file to empty).
func (t dest) writeInPlace(write func(io.Writer) error) error {
	f, err := os.OpenFile(t.final, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", t, Pathless(err))
	}
	err = stream(f, t.String(), write)
	if m := t.info.Mode(); err == nil && m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0 {
		if err = f.Sync(); err != nil { // a block device: its data on the disk
			err = fmt.Errorf("%s: %w", t, Pathless(err))
		}
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%s: %w", t, Pathless(cerr))
	}
	return err
}

// stream calls write with w, naming the file in write errors. It returns
// write's error or, if write returned nil, the first write error.
func stream(w io.Writer, name string, write func(io.Writer) error) error {
	nw := &namingWriter{w: w, name: name}
	if err := write(nw); err != nil {
		return err
	}
	return nw.err
}

// namingWriter passes writes to w; its errors name the file rather than a
// temporary file, and after the first one it writes nothing more, so that
// a device never receives data with a gap in it.
type namingWriter struct {
	w    io.Writer
	name string
	err  error // the first write error
}

func (nw *namingWriter) Write(p []byte) (int, error) {
	if nw.err != nil {
		return 0, nw.err
	}
	n, err := nw.w.Write(p)
	if err != nil {
		nw.err = fmt.Errorf("writing %s: %w", nw.name, Pathless(err))
	}
	return n, nw.err
}

// Pathless returns a *fs.PathError's or *os.LinkError's own error, so that
// a message names the path the caller gave (and not a temporary file)
// once, not a second time in the system call's words ("stat X: ...").
func Pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// gib writes a size in the largest binary unit it reaches, one decimal
// (bytes as they are): a 64 KiB file system is not "0.0 GiB".
func gib(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", b)
}

// pending holds the names of the temporary files of replacements in
// progress (replace), for Abandon.
var pending sync.Map // name → struct{}

// Abandon removes the temporary file of every replacement still in
// progress: for a process about to exit without waiting for a goroutine
// that is writing one (Ctrl-C past its grace), so that the files they
// would replace stay as they were and nothing is left beside them. A
// replacement that goes on afterwards fails, its temporary file gone; one
// whose rename was already under way may still land.
func Abandon() {
	pending.Range(func(name, _ any) bool {
		os.Remove(name.(string))
		pending.Delete(name)
		return true
	})
}

// track records a replacement's temporary file until done is called.
func track(name string) (done func()) {
	pending.Store(name, struct{}{})
	return func() { pending.Delete(name) }
}
