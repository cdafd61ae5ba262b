//go:build linux

package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The commands write every file through internal/outfile (issue 23, item
// 3): these tests check that each command's files reach it, through a
// link, onto a device and to stdout.

// TestTablePlotThroughLinks: -plot onto a link to a file and onto a
// dangling link replaces or makes the targets and keeps the links.
func TestTablePlotThroughLinks(t *testing.T) {
	dir := t.TempDir()
	saved := savedTable(t, dir)
	os.Mkdir(filepath.Join(dir, "plots"), 0o755)
	target := filepath.Join(dir, "plots", "target.svg")
	os.WriteFile(target, []byte("old"), 0o644)
	svgLink, pngLink := filepath.Join(dir, "fig.svg"), filepath.Join(dir, "fig.png")
	os.Symlink("plots/target.svg", svgLink)
	os.Symlink("plots/made.png", pngLink) // dangling
	code, _, stderr := glmul("table", "-from", saved, "-plot", svgLink+","+pngLink)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, link := range []string{svgLink, pngLink} {
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v", link, err)
		}
	}
	if b, err := os.ReadFile(target); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("the link's target holds no SVG (%v): %.40q", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "plots", "made.png")); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("the dangling link's target holds no PNG (%v): %.8q", err, b)
	}
}

// TestTablePlotOntoDevices: -plot onto a character device writes it in
// place; onto one that is full, the error is reported and the device stays.
func TestTablePlotOntoDevices(t *testing.T) {
	dir := t.TempDir()
	saved := savedTable(t, dir)
	null, full := mknodLike(t, "/dev/null", filepath.Join(dir, "null.svg")), mknodLike(t, "/dev/full", filepath.Join(dir, "full.svg"))
	code, _, stderr := glmul("table", "-from", saved, "-plot", null)
	if code != 0 {
		t.Errorf("-plot %s: exit %d: %s", null, code, stderr)
	}
	code, _, stderr = glmul("table", "-from", saved, "-plot", full)
	if code != 1 || !strings.Contains(stderr, "no space left on device") || !strings.Contains(stderr, full) {
		t.Errorf("-plot %s: exit %d, stderr %q; want exit 1 and ENOSPC", full, code, stderr)
	}
	for _, p := range []string{null, full} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("%s is no longer a character device: %v", p, err)
		}
	}
}

// TestDumpProgramThroughLinkAndStdout: -dump-program replaces a link's
// target, and "-" writes the same binary to stdout and nothing else.
func TestDumpProgramThroughLinkAndStdout(t *testing.T) {
	needGL(t)
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("target.bin", []byte("old"), 0o644)
	os.Symlink("target.bin", "link.bin")
	code, stdout, stderr := glmul("-backend", "egl", "-kernel", "tiled32", "-dump-program", "link.bin")
	if code != 0 || !strings.Contains(stdout, "program binary to link.bin") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if fi, err := os.Lstat("link.bin"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link.bin is no longer a link: %v", err)
	}
	bin, err := os.ReadFile("target.bin")
	if err != nil || len(bin) == 0 || string(bin) == "old" {
		t.Fatalf("the link's target was not written (%v): %d bytes", err, len(bin))
	}
	code, stdout, stderr = glmul("-backend", "egl", "-kernel", "tiled32", "-dump-program", "-")
	if code != 0 || stdout != string(bin) {
		t.Errorf("-dump-program -: exit %d, %d bytes on stdout, want the file's %d; stderr %q", code, len(stdout), len(bin), stderr)
	}
	if _, err := os.Lstat("-"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("-dump-program - made a file named -: %v", err)
	}
}

// mknodLike makes a character device at path with dev's numbers, skipping
// where mknod is not permitted or the device cannot be opened (nodev).
func mknodLike(t *testing.T, dev, path string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		t.Skipf("%s: %v", dev, err)
	}
	if err := syscall.Mknod(path, syscall.S_IFCHR|0o666, int(st.Rdev)); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("mknod is not permitted here: %v", err)
		}
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("a device made in %s cannot be opened: %v", filepath.Dir(path), err)
	}
	f.Close()
	return path
}
