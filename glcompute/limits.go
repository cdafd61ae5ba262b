package glcompute

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/glmul/glmul/glcompute/internal/errs"
)

// maxIndex is the largest element index the kernels' 32-bit uint arithmetic
// can address.
const maxIndex = math.MaxUint32

// checkShape reports whether an m×k by k×n product fits one binding: each
// matrix, its rows padded to 4 floats as the kernels hold them, within one
// shader storage block (checkBlock). Mul runs larger products in panels
// (see Plan, which says whether a product can run at all). It returns an error matching
// ErrTooLarge that names the limit and the largest square size that fits.
// An empty product (a dimension 0) always fits; a negative dimension
// panics. Safe from any goroutine.
func (d *Device) checkShape(m, k, n int) error {
	d.mustBeOpen()
	if m < 0 || k < 0 || n < 0 {
		panic("glcompute: negative matrix dimension")
	}
	if m == 0 || k == 0 || n == 0 {
		return nil
	}
	padded := func(rows, cols int) int64 { return 4 * int64(rows) * int64(roundUp(cols, 4)) }
	for _, mat := range []struct {
		name       string
		rows, cols int
	}{{"A", m, k}, {"B", k, n}, {"C", m, n}} {
		err := d.checkBlock(fmt.Sprintf("%s is %d×%d float32 =", mat.name, mat.rows, mat.cols), padded(mat.rows, mat.cols))
		if err == nil {
			continue
		}
		largest := int(math.Sqrt(float64(d.info.MaxSSBOBlockSize / 4)))
		for largest > 1 && d.checkBlock("", padded(largest, largest)) != nil {
			largest--
		}
		return fmt.Errorf("%w; the largest square size that fits is n = %d", err, largest)
	}
	return nil
}

// checkBlock is the one rule for what fits one shader storage binding: at
// most GL_MAX_SHADER_STORAGE_BLOCK_SIZE bytes, and floats that 32-bit
// indices reach. what names the data ("the split-K workspace is").
func (d *Device) checkBlock(what string, bytes int64) error {
	d.mustBeOpen() // a zero Device's limits are 0: its errors would mislead
	if limit := d.info.MaxSSBOBlockSize; bytes > limit || bytes/4 > maxIndex {
		return fmt.Errorf("%w: %s %s, over this driver's largest shader storage block (GL_MAX_SHADER_STORAGE_BLOCK_SIZE = %s)",
			ErrTooLarge, what, formatBytes(float64(bytes)), formatBytes(float64(limit)))
	}
	return nil
}

// formatBytes writes a size for an error message (errs.FormatBytes).
func formatBytes(b float64) string { return errs.FormatBytes(b) }

// roundUp rounds x up to a multiple of align.
func roundUp(x, align int) int { return (x + align - 1) / align * align }

// floatBytes is the size of rows×cols float32s in bytes; ok is false
// where it does not fit an int64 (or the element count an int).
func floatBytes(rows, cols int) (bytes int64, ok bool) {
	hi, lo := bits.Mul64(uint64(rows), uint64(cols))
	if hi != 0 || lo > math.MaxInt64/4 || lo > math.MaxInt {
		return 0, false
	}
	return 4 * int64(lo), true
}
