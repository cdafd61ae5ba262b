//go:build unix

package outfile

import "syscall"

// freeBytes is the space an unprivileged user may fill on dir's file
// system (statfs's f_bavail blocks).
func freeBytes(dir string) (uint64, bool) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(dir, &s); err != nil {
		return 0, false
	}
	return uint64(s.Bavail) * uint64(s.Bsize), true
}
