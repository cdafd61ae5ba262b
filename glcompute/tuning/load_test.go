//go:build unix

package tuning

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesWhatIsNoCache: a FIFO, a device, a directory or a huge
// file is refused at once with words that say what it is (issue 23: a FIFO
// or /dev/zero was accepted as a cache and read without bound).
func TestLoadRefusesWhatIsNoCache(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(`{"entries": [`+strings.Repeat(" ", MaxCacheBytes)+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "is a FIFO, not the cache file",
		"/dev/zero": "is a device, not the cache file",
		dir:         "is a directory, not the cache file",
		huge:        "too large for a glmul tuning cache",
	} {
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%s): %v, want an error with %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Load(%s) did not return within 5 s", path)
		}
	}
	if c, err := Load(filepath.Join(dir, "absent.json")); err != nil || len(c.Entries) != 0 {
		t.Errorf("absent cache: %v %v", c, err)
	}
}
