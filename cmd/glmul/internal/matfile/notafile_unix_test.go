//go:build unix

package matfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadNPYNotAFile: a directory named as a .npy input says what it
// is. (A FIFO is a stream now: TestReadStream.)
func TestReadNPYNotAFile(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "d.npy")
	os.Mkdir(sub, 0o755)
	if _, err := Open(sub, nil); err == nil || !strings.Contains(err.Error(), "d.npy: is a directory, not a .npy file") {
		t.Errorf("directory: %v", err)
	}
}
