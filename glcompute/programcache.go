package glcompute

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/outfile"
)

// programMagic starts a program cache file; the driver's binary format
// (uint32, little endian) and the binary follow.
const programMagic = "glmul-program-1\n"

// cachedProgramPath returns the file of source's program on this driver.
func (d *Device) cachedProgramPath(source string) string {
	h := sha256.New()
	for _, s := range []string{d.info.Vendor, d.info.Renderer, d.info.Version, source} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return filepath.Join(d.opts.ProgramCache, hex.EncodeToString(h.Sum(nil)[:16])+".bin")
}

// loadProgram returns source's program from Options.ProgramCache, ok
// false where there is none or the driver refuses it; on the device
// thread.
func (d *Device) loadProgram(source string) (_ glw.Program, ok bool) {
	if d.opts.ProgramCache == "" {
		return 0, false
	}
	b, err := os.ReadFile(d.cachedProgramPath(source))
	if err != nil || len(b) < len(programMagic)+4 || !bytes.HasPrefix(b, []byte(programMagic)) {
		return 0, false
	}
	b = b[len(programMagic):]
	p, ok := glw.LoadProgram(binary.LittleEndian.Uint32(b), b[4:])
	if ok {
		d.programsLoaded++
	}
	return p, ok
}

// storeProgram keeps p, compiled from source, in Options.ProgramCache,
// atomically (outfile); nothing where the driver gives no binary. A cache
// that cannot be written costs only the next process's compile: the error
// is dropped.
func (d *Device) storeProgram(source string, p glw.Program) {
	if d.opts.ProgramCache == "" {
		return
	}
	format, data := p.Binary()
	if len(data) == 0 || os.MkdirAll(d.opts.ProgramCache, 0o755) != nil {
		return
	}
	b := make([]byte, 0, len(programMagic)+4+len(data))
	b = binary.LittleEndian.AppendUint32(append(b, programMagic...), format)
	outfile.Write(d.cachedProgramPath(source), nil, append(b, data...))
}
