//go:build linux

package outfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// payload is larger than a pipe's buffer (64 KiB), so that a FIFO's reader
// must drain it while it is written.
var payload = func() []byte {
	b := make([]byte, 200<<10)
	r := rand.New(rand.NewPCG(23, 3))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// writePieces writes payload in three pieces, as a streaming writer would.
func writePieces(w io.Writer) error {
	for _, p := range [][]byte{payload[:1000], payload[1000:70000], payload[70000:]} {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// writeCase is one kind of path WriteWith is given.
type writeCase struct {
	name  string
	setup func(t *testing.T, dir string) string // makes the path to write
	write func(io.Writer) error                 // nil: writePieces
	// replaced, if set, is a file in dir that must be a new file (a
	// rename), not the old one written in place.
	replaced string
	check    func(t *testing.T, dir, path string, stdout *bytes.Buffer, err error)
}

func TestWriteWith(t *testing.T) {
	cases := []writeCase{
		{name: "new file", setup: join("new.bin"), check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			noError(t, err)
			hasData(t, path, payload)
			if m := mode(t, path); m != fs.FileMode(0o644)&^umask() {
				t.Errorf("mode %v, want 0644 less the umask", m)
			}
			onlyEntries(t, dir, "new.bin")
		}},
		{name: "replace regular file", setup: file("old.bin", 0o600), replaced: "old.bin", check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			noError(t, err)
			hasData(t, path, payload)
			if m := mode(t, path); m != 0o600 {
				t.Errorf("mode %v, want the old file's -rw-------", m)
			}
			onlyEntries(t, dir, "old.bin")
		}},
		{name: "symlink", setup: links("real.bin", "link.bin"), replaced: "real.bin", check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			noError(t, err)
			stillLinks(t, dir, "link.bin")
			hasData(t, filepath.Join(dir, "real.bin"), payload)
			if m := mode(t, filepath.Join(dir, "real.bin")); m != 0o640 {
				t.Errorf("target's mode %v, want its old -rw-r-----", m)
			}
			onlyEntries(t, dir, "link.bin", "real.bin")
		}},
		{name: "chain of symlinks", setup: links("real.bin", "a", "sub/b", "c"), replaced: "real.bin", check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			noError(t, err)
			stillLinks(t, dir, "a", "sub/b", "c")
			hasData(t, filepath.Join(dir, "real.bin"), payload)
		}},
		{name: "dangling symlink", setup: dangling, check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			noError(t, err)
			stillLinks(t, dir, "link.bin")
			hasData(t, filepath.Join(dir, "sub", "made.bin"), payload)
		}},
		{name: "directory", setup: directory, check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			if err == nil || !strings.Contains(err.Error(), "is a directory") || !strings.Contains(err.Error(), path) {
				t.Fatalf("err %v, want one naming %s as a directory", err, path)
			}
			if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
				t.Errorf("%s is no longer a directory: %v", path, err)
			}
			onlyEntries(t, path)
		}},
		fifoCase(),
		{name: "/dev/null", setup: fixed("/dev/null"), check: stillDevice},
		{name: "character device made here", setup: mknodLike("/dev/null"), check: stillDevice},
		{name: "/dev/full", setup: fixed("/dev/full"), check: deviceFull},
		{name: "/dev/full made here", setup: mknodLike("/dev/full"), check: deviceFull},
		{name: "/dev/full, error dropped by write", setup: mknodLike("/dev/full"), write: dropErrors, check: deviceFull},
		{name: "stdout", setup: stdoutHere, check: func(t *testing.T, dir, path string, stdout *bytes.Buffer, err error) {
			noError(t, err)
			if !bytes.Equal(stdout.Bytes(), payload) {
				t.Errorf("stdout got %d bytes, want the %d written", stdout.Len(), len(payload))
			}
			onlyEntries(t, dir)
		}},
		{name: "failing write", setup: file("old.bin", 0o644), write: failHalfway, check: keptOld},
		{name: "failing write through a symlink", setup: links("real.bin", "link.bin"), write: failHalfway, check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			keptOld(t, dir, filepath.Join(dir, "real.bin"), nil, err)
			stillLinks(t, dir, "link.bin")
		}},
		{name: "symlink loop", setup: loop, check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			if err == nil || !strings.Contains(err.Error(), "symbolic links") {
				t.Fatalf("err %v, want one about a loop of links", err)
			}
			stillLinks(t, dir, "a", "b")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := c.setup(t, dir)
			write := c.write
			if write == nil {
				write = writePieces
			}
			var old uint64
			if c.replaced != "" {
				old = inode(t, filepath.Join(dir, c.replaced))
			}
			var stdout bytes.Buffer
			err := WriteWith(path, &stdout, write)
			if c.replaced != "" && err == nil && inode(t, filepath.Join(dir, c.replaced)) == old {
				t.Errorf("%s was written in place, not replaced by a rename", c.replaced)
			}
			if path != Stdout && stdout.Len() > 0 {
				t.Errorf("%d bytes went to stdout for %s", stdout.Len(), path)
			}
			c.check(t, dir, path, &stdout, err)
		})
	}
}

// TestWrite: Write is WriteWith with one write; nil stdout refuses "-".
func TestWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.bin")
	noError(t, Write(p, nil, payload))
	hasData(t, p, payload)
	if err := Write(Stdout, nil, payload); err == nil || !strings.HasPrefix(err.Error(), "-: standard output") {
		t.Errorf("- with no stdout: err %v", err)
	}
}

// TestCheck: Check agrees with WriteWith without writing or blocking.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink("missing.bin", filepath.Join(dir, "dangling"))
	os.Symlink("nodir/x.bin", filepath.Join(dir, "dangling-dir"))
	for path, want := range map[string]string{
		Stdout:                              "",
		fifo:                                "", // and does not wait for a reader
		"/dev/null":                         "",
		filepath.Join(dir, "new.bin"):       "",
		filepath.Join(dir, "dangling"):      "",
		dir:                                 "is a directory",
		filepath.Join(dir, "no", "x.bin"):   "there is no directory " + filepath.Join(dir, "no"),
		filepath.Join(dir, "dangling-dir"):  "there is no directory " + filepath.Join(dir, "nodir"),
		filepath.Join(dir, "fifo", "x.bin"): "not a directory",
	} {
		err := Check(path)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Check(%s) = %v, want %q", path, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing.bin")); err == nil {
		t.Error("Check created a dangling link's target")
	}
	onlyEntries(t, dir, "dangling", "dangling-dir", "fifo")
}

// fifoCase writes to a FIFO whose reader runs meanwhile.
func fifoCase() writeCase {
	got := make(chan []byte, 1)
	return writeCase{
		name: "FIFO",
		setup: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			go func() {
				b, _ := os.ReadFile(p) // opening waits for the writer
				got <- b
			}()
			return p
		},
		check: func(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
			noError(t, err)
			select {
			case b := <-got:
				if !bytes.Equal(b, payload) {
					t.Errorf("the reader got %d bytes, want the %d written", len(b), len(payload))
				}
			case <-time.After(10 * time.Second):
				t.Error("nothing reached the FIFO's reader in 10 s")
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
				t.Errorf("%s is no longer a FIFO: %v %v", path, fi.Mode(), err)
			}
			onlyEntries(t, dir, "fifo")
		},
	}
}

func join(name string) func(*testing.T, string) string {
	return func(_ *testing.T, dir string) string { return filepath.Join(dir, name) }
}

func fixed(path string) func(*testing.T, string) string {
	return func(*testing.T, string) string { return path }
}

// file makes name holding "old" with mode perm.
func file(name string, perm fs.FileMode) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("old"), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
}

// links makes target (holding "old", mode 0640) and a chain of links to
// it, each to the next: relative links within dir, an absolute one out of
// a subdirectory. It returns the first link.
func links(target string, chain ...string) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		file(target, 0o640)(t, dir)
		next := target
		for i := len(chain) - 1; i >= 0; i-- {
			p := filepath.Join(dir, chain[i])
			os.MkdirAll(filepath.Dir(p), 0o755)
			to := next
			if strings.Contains(chain[i], "/") { // out of a subdirectory: absolute
				to = filepath.Join(dir, next)
			}
			if err := os.Symlink(to, p); err != nil {
				t.Fatal(err)
			}
			next = chain[i]
		}
		return filepath.Join(dir, chain[0])
	}
}

// dangling makes link.bin, a link to sub/made.bin, which does not exist.
func dangling(t *testing.T, dir string) string {
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	p := filepath.Join(dir, "link.bin")
	if err := os.Symlink("sub/made.bin", p); err != nil {
		t.Fatal(err)
	}
	return p
}

func directory(t *testing.T, dir string) string {
	p := filepath.Join(dir, "out")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// loop makes a → b → a.
func loop(t *testing.T, dir string) string {
	os.Symlink("b", filepath.Join(dir, "a"))
	os.Symlink("a", filepath.Join(dir, "b"))
	return filepath.Join(dir, "a")
}

// stdoutHere moves into dir and returns "-", so that a file named "-"
// would show there.
func stdoutHere(t *testing.T, dir string) string {
	t.Chdir(dir)
	return Stdout
}

// mknodLike makes, in dir, a character device with dev's numbers; it skips
// where mknod is not permitted (not root, or a container without
// CAP_MKNOD).
func mknodLike(dev string) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		var st syscall.Stat_t
		if err := syscall.Stat(dev, &st); err != nil {
			t.Skipf("%s: %v", dev, err)
		}
		p := filepath.Join(dir, "dev")
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(st.Rdev)); err != nil {
			if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
				t.Skipf("mknod is not permitted here: %v", err)
			}
			t.Fatal(err)
		}
		// A device node on a nodev mount cannot be opened.
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err != nil {
			t.Skipf("a device made in %s cannot be opened: %v", dir, err)
		} else {
			f.Close()
		}
		return p
	}
}

// failHalfway writes part of payload, then fails.
func failHalfway(w io.Writer) error {
	w.Write(payload[:1000])
	return errFailed
}

var errFailed = errors.New("the write function failed")

// dropErrors writes payload and returns nil whatever the writes said.
func dropErrors(w io.Writer) error {
	w.Write(payload[:10])
	w.Write(payload[10:])
	return nil
}

// stillDevice checks that a character device was written in place.
func stillDevice(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
	noError(t, err)
	isCharDevice(t, path)
	if path != "/dev/null" {
		onlyEntries(t, dir, "dev")
	}
}

// deviceFull checks that /dev/full's ENOSPC came back and the device
// stayed.
func deviceFull(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
		t.Errorf("err %v, want ENOSPC naming %s", err, path)
	}
	isCharDevice(t, path)
	if path != "/dev/full" {
		onlyEntries(t, dir, "dev")
	}
}

// keptOld checks that a failed write returned the write function's error
// and left path's old content and no temporary file.
func keptOld(t *testing.T, dir, path string, _ *bytes.Buffer, err error) {
	if !errors.Is(err, errFailed) {
		t.Errorf("err %v, want the write function's", err)
	}
	hasData(t, path, []byte("old"))
	for _, e := range entries(t, dir) {
		if strings.HasPrefix(e, ".") {
			t.Errorf("temporary file %s left behind", e)
		}
	}
}

func noError(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func hasData(t *testing.T, path string, want []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s holds %d bytes, not the %d written", path, len(b), len(want))
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("%s is not a regular file: %v", path, err)
	}
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

// stillLinks checks that each of names in dir is still a symbolic link.
func stillLinks(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if m := mode(t, filepath.Join(dir, n)); m&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v", n, m)
		}
	}
}

func isCharDevice(t *testing.T, path string) {
	t.Helper()
	if m := mode(t, path); m&fs.ModeCharDevice == 0 {
		t.Errorf("%s is no longer a character device: %v", path, m)
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// onlyEntries checks that dir holds exactly names (no temporary file, no
// file named "-").
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	if got := entries(t, dir); !slices.Equal(got, names) {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

// TestWriteSized: a replacement larger than its file system's free space
// is refused with ErrNoRoom before write is called (and by CheckSized),
// the old file left as it was; one that fits is written; a FIFO is
// written whatever the size.
func TestWriteSized(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.npy")
	os.WriteFile(path, []byte("before"), 0o644)
	room, ok := freeBytes(dir)
	if !ok {
		t.Skip("no free-space query on this platform")
	}
	if err := CheckSized(path, room+1<<40); !errors.Is(err, ErrNoRoom) {
		t.Errorf("CheckSized, a TiB over the free space: %v", err)
	}
	if err := CheckSized(path, 5); err != nil {
		t.Errorf("CheckSized, 5 bytes: %v", err)
	}
	called := false
	err := WriteSized(path, nil, room+1<<40, func(w io.Writer) error { called = true; return nil })
	if !errors.Is(err, ErrNoRoom) || called || !strings.Contains(err.Error(), "GiB free") {
		t.Errorf("a TiB over the free space: %v, write called: %v", err, called)
	}
	if b, _ := os.ReadFile(path); string(b) != "before" {
		t.Errorf("after the refusal: %q", b)
	}
	if err := WriteSized(path, nil, 5, func(w io.Writer) error { _, err := w.Write([]byte("after")); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "after" {
		t.Errorf("written: %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			io.Copy(io.Discard, f)
			f.Close()
		}
	}()
	if err := WriteSized(fifo, nil, room+1<<40, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err != nil {
		t.Errorf("a FIFO: %v", err)
	}
	if err := CheckSized(fifo, room+1<<40); err != nil {
		t.Errorf("CheckSized, a FIFO: %v", err)
	}
}

// TestAbandon: Abandon removes the temporary file of a replacement in
// progress, and the replacement then fails, leaving the file as it was.
func TestAbandon(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.npy")
	os.WriteFile(path, []byte("before"), 0o644)
	writing, abandoned := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- WriteWith(path, nil, func(w io.Writer) error {
			w.Write([]byte("partial"))
			close(writing)
			<-abandoned
			return nil
		})
	}()
	<-writing
	Abandon()
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after Abandon: %v", entries)
	}
	close(abandoned)
	if err := <-done; err == nil {
		t.Error("a replacement whose temporary file was abandoned succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "before" {
		t.Errorf("the file became %q", b)
	}
}
