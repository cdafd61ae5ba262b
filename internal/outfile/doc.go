// Package outfile owns every file glmul's commands write: the product of
// glmul mul (-o), the program binary of -dump-program, the plots of glmul
// table (-plot) and the tuning cache. It decides, once, what writing to a
// path means, so that no command replaces a device, a FIFO or a symbolic
// link with a regular file. It is pure Go.
//
// # What a path means
//
//   - "-" is standard output: the writer the caller passes (a caller with
//     none passes nil, and "-" is then an error).
//   - An existing character device, block device or FIFO is opened and
//     written in place: never replaced, never truncated. Opening a FIFO
//     waits until it has a reader, as a shell's redirection does. A write
//     error (ENOSPC from /dev/full) is returned.
//   - A symbolic link, or a chain of them, is followed to its final
//     target, which is then written as below; the link stays a link. A
//     dangling link's target is created.
//   - A directory is an error that says so.
//   - A regular file, or a path that does not exist, is replaced
//     atomically: the data goes to a temporary file in the target's
//     directory (named from the target's name, shortened with a hash when
//     long, so that any name up to NAME_MAX can be written), which is
//     synced and renamed over the target, so that a
//     reader sees the old file or the whole new one, never a part. A
//     replaced file keeps its permission bits (not its owner or its other
//     hard links); a new one gets 0644 less the umask. On any error the
//     old file is left as it was and the temporary file is removed. A
//     file this process may not write (read-only to it), or another
//     user's file in a sticky directory such as /tmp, is an error, found
//     before anything is written (and by Check), as a shell's > refuses
//     it; a rename would replace the first silently and fail on the
//     second only after the work.
//
// The path is looked at once, before writing: a path changed by another
// process meanwhile is written as it was found.
//
// # Errors
//
// Errors start with the path the caller gave (and the target, for a
// link), as the command's own messages about a file do ("glmul: c.npy: is
// a directory; ..."), not with this package's name, which means nothing to
// a user; write errors wrap the system's error, so that
// errors.Is(err, syscall.ENOSPC) holds. Errors returned by the caller's
// write function are returned as they are.
//
// # Threading
//
// The functions may be called from any goroutine; two writes of the same
// path at once each replace it whole, the last rename winning.
package outfile
