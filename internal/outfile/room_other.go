//go:build !unix

package outfile

// freeBytes does not know the free space here (Windows: not queried).
func freeBytes(dir string) (uint64, bool) { return 0, false }
