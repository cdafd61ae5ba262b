//go:build linux

package outfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNotReplaceable: a file this process may not write, and another
// user's file in a sticky directory, are refused by Check and by
// WriteWith before write is called, the file left as it was and nothing
// beside it. The tests run as root, who may write anything: writable and
// geteuid stand in for the kernel's answer to another user. Before, a
// read-only file was replaced without a word and the sticky directory's
// rename failed only after the work.
func TestNotReplaceable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give a file to another user (CI runs as root)")
	}
	check := func(t *testing.T, dir, path, want string) {
		t.Helper()
		if err := Check(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want an error with %q", err, want)
		}
		called := false
		err := WriteWith(path, nil, func(w io.Writer) error { called = true; _, err := w.Write([]byte("new")); return err })
		if err == nil || !strings.Contains(err.Error(), want) || called {
			t.Errorf("WriteWith: %v (write called: %v), want an error with %q before writing", err, called, want)
		}
		if b, _ := os.ReadFile(path); string(b) != "old" {
			t.Errorf("the file now holds %q", b)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("files beside it: %v", entries)
		}
	}
	t.Run("read-only", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.npy")
		os.WriteFile(path, []byte("old"), 0o444)
		writable = func(string) error { return syscall.EACCES }
		defer func() { writable = defaultWritable }()
		geteuid = func() int { return 0 } // the file's owner (root made it)
		defer func() { geteuid = os.Geteuid }()
		check(t, dir, path, "c.npy: may not be written (mode -r--r--r--): make it writable (chmod u+w "+path+")")
		// Through a link, the message names both.
		link := filepath.Join(t.TempDir(), "link.npy")
		os.Symlink(path, link)
		if err := Check(link); err == nil || !strings.Contains(err.Error(), "link.npy (a link to "+path+"): may not be written") {
			t.Errorf("Check through a link: %v", err)
		}
		// Another user's file says so: chmod is not theirs to run.
		geteuid = func() int { return 12345 }
		if err := Check(path); err == nil || !strings.Contains(err.Error(), "c.npy: may not be written: it belongs to another user (uid 0), and its mode (-r--r--r--) does not let you write it") {
			t.Errorf("Check of another user's file: %v", err)
		}
		geteuid = os.Geteuid
		writable = defaultWritable // root may: replaced, its mode kept
		if err := Write(path, nil, []byte("new")); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o444 {
			t.Errorf("mode %v after the write, want -r--r--r--", fi.Mode())
		}
	})
	t.Run("sticky", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "c.npy")
		os.WriteFile(path, []byte("old"), 0o666)
		if err := os.Chown(path, 54321, 54321); err != nil {
			t.Fatal(err)
		}
		geteuid = func() int { return 12345 }
		defer func() { geteuid = os.Geteuid }()
		check(t, dir, path, "c.npy: belongs to another user, in "+dir+", a sticky directory")
		geteuid = func() int { return 54321 } // its owner may
		if err := Check(path); err != nil {
			t.Errorf("Check by the file's owner: %v", err)
		}
		geteuid = os.Geteuid
		if err := os.Chmod(dir, 0o777); err != nil { // not sticky: anyone who may write the directory may
			t.Fatal(err)
		}
		geteuid = func() int { return 12345 }
		if err := Check(path); err != nil {
			t.Errorf("Check without the sticky bit: %v", err)
		}
	})
}

// TestProcFdLink: /dev/stdout, /proc/self/fd/N: a link whose target reads
// "pipe:[N]", not a path. It is written in place through the link, as a
// shell's redirection would; before, the link was followed by hand to a
// file "pipe:[N]" in /proc/self/fd, and the write failed.
func TestProcFdLink(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := fmt.Sprintf("/proc/self/fd/%d", w.Fd())
	if err := Check(path); err != nil {
		t.Fatalf("Check(%s): %v", path, err)
	}
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); got <- b }()
	err = WriteSized(path, nil, 1<<40, func(w io.Writer) error { _, err := w.Write([]byte("through the pipe")); return err })
	w.Close()
	if err != nil {
		t.Fatalf("WriteSized(%s): %v", path, err)
	}
	if b := <-got; string(b) != "through the pipe" {
		t.Errorf("read %q", b)
	}
}

func TestSizes(t *testing.T) {
	for b, want := range map[uint64]string{0: "0 bytes", 1000: "1000 bytes", 65536: "64.0 KiB", 3 << 20: "3.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := gib(b); got != want {
			t.Errorf("gib(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestInPlace(t *testing.T) {
	dir := t.TempDir()
	file, link := filepath.Join(dir, "c.npy"), filepath.Join(dir, "null")
	os.WriteFile(file, nil, 0o644)
	os.Symlink("/dev/null", link)
	for path, want := range map[string]bool{"/dev/null": true, link: true, file: false, filepath.Join(dir, "new.npy"): false, dir: false} {
		if got := InPlace(path); got != want {
			t.Errorf("InPlace(%s) = %v, want %v", path, got, want)
		}
	}
}
