package cpu

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of an x86-64 or arm64 transparent huge page.
const hugePage = 2 << 20

// adviseHuge asks Linux to back the whole 2 MiB pages inside data with
// transparent huge pages (madvise MADV_HUGEPAGE), as Go does not for its
// heap: where the system's THP setting is "madvise" (the common default)
// a large matrix then takes one page fault a 2 MiB page rather than 512,
// and a process that made gigabytes of them exits in milliseconds rather
// than a second spent freeing 4 KiB pages. Where THP is "never" or the
// call fails nothing changes; the advice is a hint.
func adviseHuge(data []float32) {
	if len(data)*4 < 4*hugePage {
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(data))
	p := uintptr(base)
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + uintptr(len(data))*4) &^ (hugePage - 1)
	if hi > lo {
		_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, lo-p)), hi-lo), unix.MADV_HUGEPAGE)
	}
}
