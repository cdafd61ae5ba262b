//go:build unix

package matfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadNPYNotAFile: a FIFO or a directory named as a .npy input says
// what it is (a FIFO said "not a valid .npy file: EOF").
func TestReadNPYNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "a.npy")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	// No writer: the FIFO is refused before it is opened (an open would
	// wait for one).
	if _, err := Open(fifo, nil); err == nil || !strings.Contains(err.Error(), "a.npy: is a FIFO: glmul reads a .npy file by panels") {
		t.Errorf("FIFO: %v", err)
	}
	sub := filepath.Join(dir, "d.npy")
	os.Mkdir(sub, 0o755)
	if _, err := Open(sub, nil); err == nil || !strings.Contains(err.Error(), "d.npy: is a directory, not a .npy file") {
		t.Errorf("directory: %v", err)
	}
}
