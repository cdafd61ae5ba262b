package glw

import "testing"

func TestParseVersion(t *testing.T) {
	for s, want := range map[string][2]int{
		"4.5 (Core Profile) Mesa 22.3.6": {4, 5},
		"4.3.0 NVIDIA 580.159.04":        {4, 3},
		"4.6.0 NVIDIA 580.159.04":        {4, 6},
		"OpenGL ES 3.2 Mesa 23.0":        {3, 2},
		"4.1 ATI-4.14.1":                 {4, 1},
	} {
		maj, min, ok := ParseVersion(s)
		if !ok || maj != want[0] || min != want[1] {
			t.Errorf("ParseVersion(%q) = %d.%d %v", s, maj, min, ok)
		}
	}
	for _, s := range []string{"", "four", "4"} {
		if _, _, ok := ParseVersion(s); ok {
			t.Errorf("ParseVersion(%q) accepted", s)
		}
	}
}
