package shaders

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed *.comp
var files embed.FS

// Kernel describes one compute shader of the package.
type Kernel struct {
	// Name is the kernel's name as the command line spells it ("tiled32").
	Name string
	// File is the shader's file name inside this package ("tiled32.comp");
	// compile errors name it.
	File string
	// TileM and TileN are the rows and columns of C that one work group
	// computes; the dispatch planner divides C by them.
	TileM, TileN int
	// Source is the GLSL source text.
	Source string
}

// kernels lists every kernel. The paper's kernel is the first.
var kernels = []Kernel{
	{Name: "tiled32", File: "tiled32.comp", TileM: 32, TileN: 32},
}

func init() {
	for i := range kernels {
		b, err := files.ReadFile(kernels[i].File)
		if err != nil {
			panic("shaders: missing embedded file " + kernels[i].File)
		}
		kernels[i].Source = string(b)
	}
}

// Lookup returns the kernel called name.
func Lookup(name string) (Kernel, error) {
	for _, k := range kernels {
		if k.Name == name {
			return k, nil
		}
	}
	return Kernel{}, fmt.Errorf("shaders: unknown kernel %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names returns the names of all kernels, sorted.
func Names() []string {
	var names []string
	for _, k := range kernels {
		names = append(names, k.Name)
	}
	sort.Strings(names)
	return names
}

// Tiled32 is the paper's kernel (seed 001, Algorithm 2).
func Tiled32() Kernel {
	k, _ := Lookup("tiled32")
	return k
}
