package cpu

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestNewAdvisesHugePages: a 16 MiB matrix's memory carries the
// MADV_HUGEPAGE advice ("hg" among its mapping's VmFlags in
// /proc/self/smaps), whatever the system's THP setting.
func TestNewAdvisesHugePages(t *testing.T) {
	m := New(2048, 2048)
	flags, ok := vmFlags(t, uintptr(unsafe.Pointer(&m.Data[len(m.Data)/2])))
	if !ok {
		t.Skip("no VmFlags in /proc/self/smaps")
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Fatalf("a 16 MiB matrix's mapping has VmFlags %q: no hg (MADV_HUGEPAGE)", flags)
	}
}

// vmFlags returns the VmFlags of the mapping that holds address p.
func vmFlags(t *testing.T, p uintptr) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", false
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if r, _, ok := strings.Cut(line, " "); ok && strings.Contains(r, "-") && !strings.HasSuffix(r, ":") {
			lo, hi, _ := strings.Cut(r, "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(p) >= a && uint64(p) < b
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.TrimSpace(v), true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return "", false
}
