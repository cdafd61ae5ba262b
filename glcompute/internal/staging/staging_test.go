package staging

import (
	"sync/atomic"
	"testing"
)

// TestStagerParallel checks that the copy goroutines' pieces cover every
// row once, for more and fewer rows than goroutines and pieces.
func TestStagerParallel(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 16} {
		for _, n := range []int{1, 2, 3, 15, 16, 17, 63, 64, 65, 1000, 4096} {
			s := &Stager{Workers: workers}
			seen := make([]atomic.Int32, n)
			s.parallel(n, func(i0, i1 int) {
				if i0 >= i1 {
					t.Errorf("workers %d, n %d: empty piece [%d, %d)", workers, n, i0, i1)
				}
				for i := i0; i < i1; i++ {
					seen[i].Add(1)
				}
			})
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("workers %d, n %d: row %d copied %d times", workers, n, i, c)
				}
			}
		}
	}
}
