package tuning

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/glmul/glmul/internal/outfile"
)

// Driver identifies a GL driver: a tuned configuration is valid for exactly
// this triple, since a driver update can change what is fastest.
type Driver struct {
	Vendor   string `json:"vendor"`
	Renderer string `json:"renderer"`
	Version  string `json:"version"`
}

// Entry is one tuned result.
type Entry struct {
	Driver
	// Class is the shape class tuned ("" in caches written before classes:
	// Square).
	Class  Class     `json:"class,omitempty"`
	Kernel string    `json:"kernel"` // a shaders.Lookup spec, "fast:128x128x16_8x4_db"
	GFLOPS float64   `json:"gflops"` // its rate in the tuning run
	N      int       `json:"n"`      // glmul tune's -n, which the class's products scale with (Class.Shapes)
	When   time.Time `json:"when"`
	// Float64 marks a float64 kernel's entry (a dfast spec, glmul tune
	// -type f64); false, and absent in caches written before float64
	// entries, for float32's.
	Float64 bool `json:"float64,omitempty"`
}

// Class is a family of product shapes that glmul tune tunes separately:
// the fastest configuration for square products is not the fastest for a
// small result over a long K, nor for a large result over a short one.
type Class string

const (
	Square Class = "square" // M, K and N alike (and any shape of no other class)
	LongK  Class = "long-k" // a small result over a long inner dimension
	ThinK  Class = "thin-k" // a large result over a short inner dimension
)

// Classes are the shape classes, in glmul tune's order.
var Classes = []Class{Square, LongK, ThinK}

// ParseClass reads a class name.
func ParseClass(s string) (Class, error) {
	for _, c := range Classes {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown shape class %q: want square, long-k or thin-k", s)
}

// Classify returns the class of an m×k by k×n product: ThinK when K is
// under 512 and at most a quarter of the smaller of M and N (4096×64×4096),
// LongK when K is at least four times the larger (64×4096×64,
// 1000×4096×1000), else Square.
func Classify(m, k, n int) Class {
	switch {
	case k < 512 && 4*k <= min(m, n):
		return ThinK
	case k >= 4*max(m, n):
		return LongK
	}
	return Square
}

// Shapes returns the products glmul tune measures c on for its size n (a
// configuration is scored by its geometric mean rate over them): the
// class's range, since one product does not stand for it
// (docs/PERFORMANCE.md, "Tuning per shape class"). Square: (n/2)³, n³,
// (2n)³. LongK, at n = 2048: 64×4096×64, 256×8192×256, 1024×4096×1024.
// ThinK: 2048×64×2048, 4096×128×4096, 1024×32×1024. Each is of its class;
// an n under 16 counts as 16.
func (c Class) Shapes(n int) [][3]int {
	n = max(n, 16)
	switch c {
	case LongK:
		return [][3]int{{max(n/32, 1), 2 * n, max(n/32, 1)}, {max(n/8, 1), 4 * n, max(n/8, 1)}, {max(n/2, 1), 2 * n, max(n/2, 1)}}
	case ThinK:
		thin := func(side, k int) [3]int { return [3]int{side, max(min(k, side/4), 1), side} }
		return [][3]int{thin(n, 64), thin(2*n, 128), thin(max(n/2, 4), 32)}
	}
	return [][3]int{{max(n/2, 1), max(n/2, 1), max(n/2, 1)}, {n, n, n}, {2 * n, 2 * n, 2 * n}}
}

// norm is c with the pre-class "" read as Square.
func (c Class) norm() Class {
	if c == "" {
		return Square
	}
	return c
}

// Cache is the tuning file's content.
type Cache struct {
	Entries []Entry `json:"entries"`
}

// Path returns the cache file: $GLMUL_TUNE_CACHE if set, else glmul/tuned.json
// in the user's cache directory (os.UserCacheDir: $XDG_CACHE_HOME or
// ~/.cache on Linux).
func Path() (string, error) {
	if p := os.Getenv("GLMUL_TUNE_CACHE"); p != "" {
		return p, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("tuning: no cache directory: %w", err)
	}
	return filepath.Join(dir, "glmul", "tuned.json"), nil
}

// Load reads the cache at path; a missing file is an empty cache.
func Load(path string) (Cache, error) {
	var c Cache
	b, err := readCache(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("tuning: %s is not a glmul tuning cache (%w); delete it (glmul tune then writes a new one)", path, err)
	}
	return c, nil
}

// MaxCacheBytes bounds the tuning cache that Load reads: a few hundred
// bytes an entry, three classes per driver; anything larger is not a cache
// glmul wrote.
const MaxCacheBytes = 1 << 20

// readCache reads the cache file at path: a regular file of at most
// MaxCacheBytes. A FIFO, device or directory is refused before it is
// opened (reading a FIFO would wait for a writer, /dev/zero never ends).
func readCache(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("tuning: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("tuning: %s is %s, not the cache file; point GLMUL_TUNE_CACHE at a file (one that does not exist yet is created)", path, fileKind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tuning: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxCacheBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tuning: reading %s: %w", path, err)
	}
	if len(b) > MaxCacheBytes {
		return nil, fmt.Errorf("tuning: %s is larger than %d bytes, too large for a glmul tuning cache; delete it (glmul tune then writes a new one)", path, MaxCacheBytes)
	}
	return b, nil
}

// Lookup returns the float32 entry for d's square products, if any.
func (c Cache) Lookup(d Driver) (Entry, bool) { return c.LookupClass(d, Square) }

// LookupClass returns the float32 entry for d and shape class cl, if any.
func (c Cache) LookupClass(d Driver, cl Class) (Entry, bool) { return c.find(d, cl, false) }

// LookupClass64 returns the float64 entry for d and shape class cl, if
// any.
func (c Cache) LookupClass64(d Driver, cl Class) (Entry, bool) { return c.find(d, cl, true) }

func (c Cache) find(d Driver, cl Class, f64 bool) (Entry, bool) {
	for _, e := range c.Entries {
		if e.same(d, cl, f64) {
			return e, true
		}
	}
	return Entry{}, false
}

// same reports whether e is the entry of driver d, class cl and element
// type (f64: float64).
func (e Entry) same(d Driver, cl Class, f64 bool) bool {
	return e.Driver == d && e.Class.norm() == cl.norm() && e.Float64 == f64
}

// Put replaces the entry of e's driver, class and element type (or adds
// it).
func (c *Cache) Put(e Entry) {
	for i := range c.Entries {
		if c.Entries[i].same(e.Driver, e.Class, e.Float64) {
			c.Entries[i] = e
			return
		}
	}
	c.Entries = append(c.Entries, e)
}

// Delete removes the float32 entry of driver d and class cl, if any.
func (c *Cache) Delete(d Driver, cl Class) { c.remove(d, cl, false) }

// Delete64 removes the float64 entry of driver d and class cl, if any.
func (c *Cache) Delete64(d Driver, cl Class) { c.remove(d, cl, true) }

func (c *Cache) remove(d Driver, cl Class, f64 bool) {
	c.Entries = slices.DeleteFunc(c.Entries, func(e Entry) bool { return e.same(d, cl, f64) })
}

// TunedMargin is how much faster than the built-in choice a tuned winner
// must measure, in the same sweep, to be cached: the sweep's noise is a few
// percent, and one winning by less is not worth replacing a choice that was
// measured on more shapes than the class's one product.
const TunedMargin = 1.05

// Save writes the cache to path through outfile (atomically; a link's
// target is replaced, the link kept), creating path's directory.
func (c Cache) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("tuning: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := outfile.Write(path, nil, append(b, '\n')); err != nil {
		return fmt.Errorf("tuning: %w", err)
	}
	return nil
}

// fileKind names what a path that is not a regular file is, for messages
// (fs.FileMode's String gives "d---------" for a directory).
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
