//go:build linux

package outfile

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLongNames: a name the file system takes (up to NAME_MAX, 255 bytes)
// is written, new or replaced, through a link too: the temporary file
// beside it has a name of its own that fits, and none is left behind.
func TestLongNames(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 17))
	name := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[r.IntN(36)]
		}
		return string(b)
	}
	// 127 two-byte runes and an ASCII byte: 255 bytes cut mid-rune would
	// not be UTF-8.
	wide := strings.Repeat("é", 127) + "x"
	for _, base := range []string{name(200), name(236), name(250), name(255), wide} {
		dir := t.TempDir()
		path := filepath.Join(dir, base)
		data := []byte(name(1 + r.IntN(64)))
		noError(t, Check(path))
		noError(t, Write(path, nil, data)) // new
		hasData(t, path, data)
		os.Chmod(path, 0o600)
		data = []byte(name(1 + r.IntN(64)))
		noError(t, Write(path, nil, data)) // replaced
		hasData(t, path, data)
		if m := mode(t, path); m != 0o600 {
			t.Errorf("%d bytes: mode %v, want the old file's -rw-------", len(base), m)
		}
		link := filepath.Join(dir, "link")
		os.Symlink(base, link)
		data = []byte(name(1 + r.IntN(64)))
		noError(t, Write(link, nil, data)) // through a link
		hasData(t, path, data)
		want := []string{base, "link"}
		slices.Sort(want)
		onlyEntries(t, dir, want...)
	}
}
