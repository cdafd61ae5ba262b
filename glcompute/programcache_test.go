package glcompute

import (
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/internal/conformance"
)

// TestProgramCache: a device with Options.ProgramCache keeps the programs
// it compiles there; a second device on the same driver loads them
// instead of compiling, and its products are right; damaged files (a
// changed driver's, or cut short) are compiled again, replaced, and
// loaded by the next device; without the option nothing is loaded.
func TestProgramCache(t *testing.T) {
	dir := tempDir(t)
	shapes := []conformance.Shape{{M: 70, K: 33, N: 17}, {M: 129, K: 64, N: 130}}
	product := func(o *Options) (loaded int) {
		t.Helper()
		d := openDeviceWith(t, o)
		conformance.Run(t, shapes, func(c, a, b blas32.General) error {
			_, err := d.Mul(c, a, b, &MulOptions{Kernel: "tiled32"})
			return err
		})
		return d.programsLoaded
	}
	if n := product(&Options{Backend: BackendEGL, ProgramCache: dir}); n != 0 {
		t.Errorf("a new cache: %d programs loaded", n)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
	if len(files) == 0 {
		t.Skip("the driver gives no program binaries (GL_NUM_PROGRAM_BINARY_FORMATS 0): nothing to cache")
	}
	if n := product(&Options{Backend: BackendEGL, ProgramCache: dir}); n == 0 {
		t.Errorf("%d programs cached, none loaded by the next device", len(files))
	}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 { // another driver's binary: its bytes changed
			for j := len(programMagic) + 4; j < len(b); j++ {
				b[j] ^= 0x5a
			}
		} else {
			b = b[:len(b)/2]
		}
		os.WriteFile(f, b, 0o644)
	}
	if n := product(&Options{Backend: BackendEGL, ProgramCache: dir}); n != 0 {
		t.Errorf("damaged binaries: %d loaded", n)
	}
	if n := product(&Options{Backend: BackendEGL, ProgramCache: dir}); n == 0 {
		t.Error("binaries replaced after damage: none loaded")
	}
	if n := product(&Options{Backend: BackendEGL}); n != 0 {
		t.Errorf("no ProgramCache: %d programs loaded", n)
	}
}
