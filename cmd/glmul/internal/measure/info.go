package measure

import (
	"strings"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/tuning"
)

// API names a context's API and version for people: "OpenGL 4.5 (Core
// Profile) Mesa 22.3.6", "OpenGL ES 3.2 Mesa 22.3.6" (an ES version string
// carries its own prefix).
func API(i glcompute.Info) string {
	if strings.HasPrefix(i.Version, "OpenGL") {
		return i.Version
	}
	return "OpenGL " + i.Version
}

// ShadingLanguage names the shading language version as API does:
// "GLSL 4.50", "OpenGL ES GLSL ES 3.20".
func ShadingLanguage(i glcompute.Info) string {
	if strings.HasPrefix(i.GLSLVersion, "OpenGL") {
		return i.GLSLVersion
	}
	return "GLSL " + i.GLSLVersion
}

// Driver is the driver as glcompute/tuning keys and judges it: vendor,
// renderer and version.
func Driver(i glcompute.Info) tuning.Driver {
	return tuning.Driver{Vendor: i.Vendor, Renderer: i.Renderer, Version: i.Version}
}

// Facts are what the device model (tuning.Model) reads of a device.
func Facts(i glcompute.Info) tuning.Facts {
	return tuning.Facts{SharedMemory: i.MaxSharedMemory, Invocations: i.MaxWorkGroupInvocations}
}
