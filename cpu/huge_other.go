//go:build !linux

package cpu

// adviseHuge does nothing outside Linux (see huge_linux.go).
func adviseHuge([]float32) {}
