package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestStageBar: a stage's bar is made at its first call and says what it
// shows; -progress off (and auto off a terminal) shows none.
func TestStageBar(t *testing.T) {
	var buf bytes.Buffer
	if stageBar("off", &buf, "x") != nil || stageBar("auto", &buf, "x") != nil {
		t.Fatal("a bar with -progress off, or auto off a terminal")
	}
	p := stageBar("on", &buf, "making A and B")
	if buf.Len() != 0 {
		t.Fatalf("the bar drew %q before its first step", buf.String())
	}
	p(1, 4)
	p(4, 4)
	if !strings.Contains(buf.String(), "making A and B") || !strings.Contains(buf.String(), "/4)") {
		t.Fatalf("the bar drew %q", buf.String())
	}
}
