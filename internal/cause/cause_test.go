package cause

import (
	"errors"
	"fmt"
	"testing"
)

// TestMark: a marked error keeps its message and matches both what it
// wraps and its cause, through further wrapping; nil stays nil.
func TestMark(t *testing.T) {
	base := errors.New("unsupported")
	err := fmt.Errorf("open: %w", Mark(fmt.Errorf("%w: OpenGL 4.3 is needed", base), GLVersion))
	if err.Error() != "open: unsupported: OpenGL 4.3 is needed" {
		t.Errorf("message %q", err)
	}
	if !errors.Is(err, base) || !errors.Is(err, GLVersion) || errors.Is(err, NoDisplay) {
		t.Errorf("Is: base %v, GLVersion %v, NoDisplay %v", errors.Is(err, base), errors.Is(err, GLVersion), errors.Is(err, NoDisplay))
	}
	if Mark(nil, GLVersion) != nil {
		t.Error("Mark(nil) is not nil")
	}
}
