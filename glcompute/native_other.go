//go:build !(linux || freebsd || netbsd || openbsd || windows)

package glcompute

import "unsafe"

// native: glmul knows no window system binding here (macOS's CGL stops at
// OpenGL 4.1, without compute shaders), so NewDeviceFromCurrent finds no
// context to borrow and says so.
var native = nativeBinding{name: "the window system's", current: func() uintptr { return 0 },
	getProc: func(string) unsafe.Pointer { return nil }}
