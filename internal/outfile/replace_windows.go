package outfile

import "io/fs"

// perm returns the permission bits of t's replacement: on Windows only
// the read-only attribute follows them, and a read-only file was refused
// (replaceable), so the replacement is writable.
func (t dest) perm() (fs.FileMode, bool) {
	return 0o644, false
}

// syncDir does nothing on Windows: a directory cannot be opened to sync,
// and os.Rename (MoveFileEx with MOVEFILE_REPLACE_EXISTING) is one step for
// readers: they see the old file or the new one.
func syncDir(dir string, t dest) error { return nil }
