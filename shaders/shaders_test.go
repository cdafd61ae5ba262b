package shaders

import (
	"strings"
	"testing"
)

func TestTiled32IsThePapersKernel(t *testing.T) {
	k := Tiled32()
	for _, want := range []string{
		"#version 430",
		"local_size_x = 32, local_size_y = 32",
		"shared float As[BLOCK_SIZE][BLOCK_SIZE]",
		"shared float Bs[BLOCK_SIZE][BLOCK_SIZE]",
		"memoryBarrierShared();",
		"barrier();",
		"uniform uint x0;", "uniform uint y0;",
		"binding = 0", "binding = 1", "binding = 2",
	} {
		if !strings.Contains(k.Source, want) {
			t.Errorf("tiled32.comp lacks %q", want)
		}
	}
	if k.TileM != 32 || k.TileN != 32 {
		t.Errorf("tile = %d×%d, want 32×32", k.TileM, k.TileN)
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), "tiled32") {
		t.Fatalf("Lookup(nope) error = %v, want one listing the known kernels", err)
	}
}
