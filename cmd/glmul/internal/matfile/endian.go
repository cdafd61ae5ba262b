package matfile

import (
	"encoding/binary"
	"unsafe"
)

// hostOrder is this machine's byte order, checked once: where a .npy
// file's float32 data are in it ('<f4' on a little-endian host), they
// move between the file and a matrix's memory as they are.
var hostOrder = nativeOrder()

// nativeOrder returns binary.LittleEndian or binary.BigEndian, whichever
// binary.NativeEndian is.
func nativeOrder() binary.ByteOrder {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

// float32Bytes returns f's memory as bytes, 4 a float32 in the host's
// byte order. It is a view, not a copy: a positioned read fills a
// matrix's rows straight from the file, and a Sink writes them straight
// out, with no copy and no conversion, where the file's byte order is the
// host's. The bytes alias f: f must not be used otherwise while they are.
func float32Bytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// float64Bytes is float32Bytes for float64s, 8 bytes each.
func float64Bytes(f []float64) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 8*len(f))
}
