package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (slash-separated path to contents) under a fresh
// temporary directory and returns that directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, src := range files {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fileOfLines returns a Go source file of package pkg with exactly n lines.
func fileOfLines(pkg string, n int) string {
	return "package " + pkg + "\n" + strings.Repeat("// filler\n", n-1)
}

// funcOfLines returns a function declaration of exactly n lines, from its
// func keyword to its closing brace, preceded by a doc comment.
func funcOfLines(head string, n int) string {
	return "// Doc comment, which does not count.\n// Nor does this line.\n" +
		head + " {\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
}

// importing returns a Go file of package pkg importing the given paths.
func importing(pkg string, paths ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n", pkg)
	for _, p := range paths {
		fmt.Fprintf(&b, "\t_ %q\n", p)
	}
	b.WriteString(")\n")
	return b.String()
}

// mustCheck runs check on root and fails the test on error.
func mustCheck(t *testing.T, root string) ([]violation, stats) {
	t.Helper()
	vs, st, err := check(root)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return vs, st
}

// wantViolations compares violations, formatted, with want.
func wantViolations(t *testing.T, vs []violation, want ...string) {
	t.Helper()
	got := make([]string, len(vs))
	for i, v := range vs {
		got[i] = v.String()
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const mod = modulePath + "/"

func TestCleanTreePasses(t *testing.T) {
	root := writeTree(t, map[string]string{
		"cmd/glmul/main.go":               importing("main", mod+"cmd/glmul/internal/report", mod+"glcompute", "fmt"),
		"cmd/glmul/internal/report/r.go":  importing("report", mod+"glcompute", mod+"internal/table", mod+"cpu"),
		"cmd/other/main.go":               importing("main", mod+"glcompute/glfw"),
		"glcompute/gemm.go":               importing("glcompute", mod+"glcompute/internal/glw", mod+"internal/tuning", mod+"shaders"),
		"glcompute/glfw/glfw.go":          importing("glfw", mod+"glcompute"),
		"glcompute/internal/glw/glw.go":   importing("glw", mod+"internal/table", mod+"validate"),
		"internal/table/t.go":             importing("table", mod+"glcompute/internal/glw", mod+"cpu"),
		"shaders/s.go":                    importing("shaders", mod+"cpu", mod+"validate"),
		"scripts/tool/main.go":            importing("main", mod+"cmd/glmul", mod+"glcompute"),
		"bench/b.go":                      importing("bench", mod+"cmd/glmul"),
		"doc.go":                          importing("glmul", mod+"cmd/glmul"),
		"cpu/cpu.go":                      "package cpu\n\n" + funcOfLines("func (m *Matrix[T]) Mul()", 10),
		"validate/v.go":                   "package validate\n\n" + funcOfLines("func Check()", 64),
		"validate/v_test.go":              "package validate\n\n" + funcOfLines("func TestCheck(t *testing.T)", 3),
		"internal/table/notes.txt":        "not Go\n",
		"glcompute/internal/glw/asm_x.go": "package glw\n\nfunc fast()\n",
	})
	vs, st := mustCheck(t, root)
	wantViolations(t, vs)
	if st.files != 15 || st.funcs != 2 {
		t.Errorf("stats: %d files, %d functions; want 15, 2", st.files, st.funcs)
	}
	if st.longestFunc != (extent{64, "validate/v.go", "Check"}) {
		t.Errorf("longest function: %+v", st.longestFunc)
	}
	want := "limits: ok (15 files, 2 functions, longest function 64 lines in validate/v.go (Check), longest file 68 lines in validate/v.go)"
	if got := st.summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

func TestFileLength(t *testing.T) {
	root := writeTree(t, map[string]string{
		"internal/a/exact.go":        fileOfLines("a", 600),
		"internal/a/over.go":         fileOfLines("a", 601),
		"internal/a/over_test.go":    fileOfLines("a", 700),
		"internal/a/noeol.go":        strings.TrimSuffix(fileOfLines("a", 601), "\n"),
		"internal/a/noeol_ok.go":     strings.TrimSuffix(fileOfLines("a", 600), "\n"),
		"scripts/outside/layered.go": fileOfLines("outside", 601),
	})
	vs, st := mustCheck(t, root)
	wantViolations(t, vs,
		"internal/a/noeol.go:1: file has 601 lines, over 600: split it by concern",
		"internal/a/over.go:1: file has 601 lines, over 600: split it by concern",
		"scripts/outside/layered.go:1: file has 601 lines, over 600: split it by concern",
	)
	if st.longestFile.lines != 601 {
		t.Errorf("longest file: %+v", st.longestFile)
	}
}

func TestFuncLength(t *testing.T) {
	root := writeTree(t, map[string]string{
		"internal/f/f.go": "package f\n\n" +
			funcOfLines("func exact()", 64) + // doc at 3, func at 5: passes
			funcOfLines("func over()", 65) + // func at 71
			funcOfLines("func (s *Stack) Push(x int)", 65) + // func at 138
			funcOfLines("func (s Stack) Peek() int", 80) + // func at 205
			funcOfLines("func (p *Pair[K, V]) Swap()", 66) + // func at 287
			funcOfLines("func (l List[T]) Len() int", 65) + // func at 355
			"func external()\n",
		"internal/f/f_test.go": "package f\n\n" + funcOfLines("func helper()", 200),
	})
	vs, st := mustCheck(t, root)
	wantViolations(t, vs,
		"internal/f/f.go:71: func over has 65 lines, over 64",
		"internal/f/f.go:138: func Stack.Push has 65 lines, over 64",
		"internal/f/f.go:205: func Stack.Peek has 80 lines, over 64",
		"internal/f/f.go:287: func Pair.Swap has 66 lines, over 64",
		"internal/f/f.go:355: func List.Len has 65 lines, over 64",
	)
	if st.funcs != 6 {
		t.Errorf("measured %d functions, want 6 (bodiless and test functions excluded)", st.funcs)
	}
	if st.longestFunc != (extent{80, "internal/f/f.go", "Stack.Peek"}) {
		t.Errorf("longest function: %+v", st.longestFunc)
	}
}

func TestUpwardImports(t *testing.T) {
	root := writeTree(t, map[string]string{
		"internal/x/x.go": importing("x", mod+"glcompute", mod+"internal/y", "fmt"),
		"glcompute/internal/g/g.go": "// Package g.\npackage g\n\nimport \"fmt\"\n\n" +
			"import (\n\t\"os\"\n\n\tglfw " + "\"" + mod + "glcompute/glfw\"\n)\n",
		"glcompute/cli_test.go":          importing("glcompute", mod+"cmd/glmul/internal/report"),
		"glcompute/ext_test.go":          importing("glcompute_test", mod+"cmd/glmul", mod+"glcompute"),
		"cmd/glmul/internal/report/r.go": importing("report", mod+"cmd/glmul"),
		"shaders/s.go":                   importing("shaders", mod+"internal/x", mod+"cpu"),
		"cpu/c.go":                       importing("cpu", mod+"glcompute/internal/g", mod+"scripts/tool", modulePath),
	})
	vs, _ := mustCheck(t, root)
	wantViolations(t, vs,
		`cmd/glmul/internal/report/r.go:4: imports github.com/glmul/glmul/cmd/glmul (layer "cmd" above this file's layer "cli-internal"): imports must point down`,
		`cpu/c.go:4: imports github.com/glmul/glmul/glcompute/internal/g (layer "library-internal" above this file's layer "base"): imports must point down`,
		`glcompute/cli_test.go:4: imports github.com/glmul/glmul/cmd/glmul/internal/report (layer "cli-internal" above this file's layer "library"): imports must point down`,
		`glcompute/ext_test.go:4: imports github.com/glmul/glmul/cmd/glmul (layer "cmd" above this file's layer "library"): imports must point down`,
		`glcompute/internal/g/g.go:9: imports github.com/glmul/glmul/glcompute/glfw (layer "library" above this file's layer "library-internal"): imports must point down`,
		`internal/x/x.go:4: imports github.com/glmul/glmul/glcompute (layer "library" above this file's layer "library-internal"): imports must point down`,
		`shaders/s.go:4: imports github.com/glmul/glmul/internal/x (layer "library-internal" above this file's layer "base"): imports must point down`,
	)
}

// TestRawStringImport checks that a back-quoted import path is understood.
func TestRawStringImport(t *testing.T) {
	root := writeTree(t, map[string]string{
		"validate/v.go": "package validate\n\nimport _ `" + mod + "cmd/other`\n",
	})
	vs, _ := mustCheck(t, root)
	wantViolations(t, vs,
		`validate/v.go:3: imports github.com/glmul/glmul/cmd/other (layer "cmd" above this file's layer "base"): imports must point down`)
}

func TestLayerTable(t *testing.T) {
	cases := map[string]string{
		"cmd":                         "cmd",
		"cmd/glmul":                   "cmd",
		"cmd/other":                   "cmd",
		"cmd/glmul/sub":               "cmd",
		"cmd/glmul/internal":          "cli-internal",
		"cmd/glmul/internal/report":   "cli-internal",
		"cmd/glmul/internal/a/b":      "cli-internal",
		"cmd/other/internal":          "cmd",
		"glcompute":                   "library",
		"glcompute/glfw":              "library",
		"glcompute/internal":          "library-internal",
		"glcompute/internal/glw":      "library-internal",
		"internal":                    "library-internal",
		"internal/table":              "library-internal",
		"shaders":                     "base",
		"validate":                    "base",
		"cpu":                         "base",
		"":                            "",
		"scripts/limits":              "",
		"bench":                       "",
		"bench/internal":              "",
		"cpux":                        "",
		"glcomputex":                  "",
		"cmdline":                     "",
		"examples/internal/something": "",
	}
	for dir, want := range cases {
		got := ""
		if l, ok := layerOf(dir); ok {
			got = l.name
		}
		if got != want {
			t.Errorf("layerOf(%q) = %q, want %q (\"\" for outside the layering)", dir, got, want)
		}
	}
}

// TestLayerTableWellFormed checks that ranks strictly descend, and that names
// and patterns are unique, so that "most specific pattern" is never a tie.
func TestLayerTableWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for i, l := range layers {
		if i > 0 && l.rank >= layers[i-1].rank {
			t.Errorf("layer %q: rank %d not below %d", l.name, l.rank, layers[i-1].rank)
		}
		if seen["name:"+l.name] {
			t.Errorf("layer name %q repeated", l.name)
		}
		seen["name:"+l.name] = true
		for _, p := range l.patterns {
			base, _ := strings.CutSuffix(p, "/...")
			if seen[base] {
				t.Errorf("pattern directory %q repeated", base)
			}
			seen[base] = true
		}
	}
}

func TestSkippedDirectories(t *testing.T) {
	big := fileOfLines("p", 700)
	root := writeTree(t, map[string]string{
		"testdata/a.go":           big,
		"glcompute/testdata/a.go": big,
		"examples/x/a.go":         big,
		"vendor/m/a.go":           big,
		"bin/a.go":                big,
		".device/a.go":            big,
		".git/a.go":               big,
		"internal/.ci/a.go":       big,
		"internal/ok/a.go":        "package ok\n",
		"internal/ok/a.txt":       big,
	})
	vs, st := mustCheck(t, root)
	wantViolations(t, vs)
	if st.files != 1 {
		t.Errorf("considered %d files, want 1", st.files)
	}
}

// TestDotRoot checks that the root itself is walked even when its name
// starts with a dot or is a skipped name, as "." does.
func TestDotRoot(t *testing.T) {
	for _, name := range []string{".hidden", "testdata"} {
		parent := writeTree(t, map[string]string{name + "/cpu/a.go": fileOfLines("cpu", 601)})
		vs, _ := mustCheck(t, filepath.Join(parent, name))
		wantViolations(t, vs, "cpu/a.go:1: file has 601 lines, over 600: split it by concern")
	}
	t.Chdir(writeTree(t, map[string]string{"cpu/a.go": fileOfLines("cpu", 601)}))
	vs, _ := mustCheck(t, ".")
	wantViolations(t, vs, "cpu/a.go:1: file has 601 lines, over 600: split it by concern")
}

func TestCheckErrors(t *testing.T) {
	root := writeTree(t, map[string]string{
		"file.txt":    "x",
		"bad/bad.go":  "package bad\n\nfunc {\n",
		"good/doc.go": "package good\n",
	})
	for _, r := range []string{filepath.Join(root, "missing"), filepath.Join(root, "file.txt")} {
		if _, _, err := check(r); err == nil {
			t.Errorf("check(%s): no error", r)
		}
	}
	_, _, err := check(root)
	if err == nil || !strings.Contains(err.Error(), "bad/bad.go:3") {
		t.Errorf("parse error: %v; want one naming bad/bad.go:3", err)
	}
}

func TestEmptyTreeSummary(t *testing.T) {
	vs, st := mustCheck(t, t.TempDir())
	wantViolations(t, vs)
	want := "limits: ok (0 files, 0 functions, longest function none, longest file none)"
	if got := st.summary(); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

func TestCountLines(t *testing.T) {
	cases := map[string]int{"": 0, "a": 1, "a\n": 1, "a\nb": 2, "a\nb\n": 2, "\n\n": 2}
	for src, want := range cases {
		if got := countLines([]byte(src)); got != want {
			t.Errorf("countLines(%q) = %d, want %d", src, got, want)
		}
	}
}

// docOfLines returns a doc comment of exactly n lines, indented by indent.
func docOfLines(indent string, n int) string {
	return strings.Repeat(indent+"// doc\n", n)
}

func TestDocCommentLength(t *testing.T) {
	src := "package a\n\n" + // lines 1-2
		docOfLines("", 12) + "func Exact() {}\n" + // 3-15: passes
		docOfLines("", 13) + "func Over() {}\n" + // doc at 16
		docOfLines("", 20) + "func unexported() {}\n" + // 30-50: passes
		docOfLines("", 13) + "func (t *T) Method() {}\n" + // doc at 51
		docOfLines("", 13) + "func (t t2) Hidden() {}\n" + // 65-78: passes, type unexported
		docOfLines("", 13) + "type T struct {\n" + // doc at 79; struct at 92
		docOfLines("\t", 13) + "\tField int\n" + // doc at 93
		docOfLines("\t", 13) + "\tfield int\n" + // 107-120: passes
		"}\n" + // 121
		docOfLines("", 13) + "const C = 1\n" + // doc at 122
		"// Group doc.\n" + docOfLines("", 12) + "const (\n" + // group doc at 136
		docOfLines("\t", 13) + "\tV1, v2 = 1, 2\n" + // doc at 150
		")\n" + // 164
		"type I interface {\n" + // 165
		docOfLines("\t", 13) + "\tDo()\n" + // doc at 166
		"}\n" + // 180
		docOfLines("", 13) + "var (\n\tw = 1\n)\n" + // 181-196: passes, nothing exported
		docOfLines("", 13) + "type t2 struct{}\n" // 197-210: passes
	root := writeTree(t, map[string]string{
		"glcompute/internal/a/a.go":      src,
		"glcompute/internal/a/a_test.go": "package a\n\n" + docOfLines("", 20) + "func TestX() {}\n",
		"internal/b/b.go":                "package b\n\n" + docOfLines("", 20) + "func Long() {}\n",
		"glcomputex/c.go":                "package c\n\n" + docOfLines("", 20) + "func Long() {}\n",
	})
	vs, _ := mustCheck(t, root)
	const tail = ", over 12: say what and why, link the measurements in docs/"
	wantViolations(t, vs,
		"glcompute/internal/a/a.go:16: doc comment of Over has 13 lines"+tail,
		"glcompute/internal/a/a.go:51: doc comment of T.Method has 13 lines"+tail,
		"glcompute/internal/a/a.go:79: doc comment of T has 13 lines"+tail,
		"glcompute/internal/a/a.go:93: doc comment of T.Field has 13 lines"+tail,
		"glcompute/internal/a/a.go:122: doc comment of C has 13 lines"+tail,
		"glcompute/internal/a/a.go:136: doc comment of const block of V1 has 13 lines"+tail,
		"glcompute/internal/a/a.go:150: doc comment of V1 has 13 lines"+tail,
		"glcompute/internal/a/a.go:166: doc comment of I.Do has 13 lines"+tail,
	)
}

func TestMeasurementComments(t *testing.T) {
	src := `package a

// Good: 1 MiB buffers, K = 262140, 4 slices, 2s complement, 128s, NVIDIA
// and Mesa llvmpipe, ms and TFLOPS as words.
func Good() {}

// Linked: 46.3 TFLOPS on the H100, 10–15 µs a product,
// docs/PERFORMANCE.md, "A transposed".
func Linked() {}

// On the H100 it won.
func GPU() {}

// On an RTX 4090 too.
func RTX() {}

func body() {
	x := 1 // 0.229 ms against 0.234
	_ = x
	// Two lines, the second timed:
	// 10–15 µs a product.
}

/* A block comment: 14.1 GB/s. */

// Units, each comment its own: 3.2 ms,
// and the next line of the comment is not reported: 46 TFLOPS.

// 12-19 GFLOPS

// 0.5 s

// 23.4µs

// 2 ns.
const Units = 1
`
	root := writeTree(t, map[string]string{
		"glcompute/a.go":        src,
		"glcompute/a_test.go":   "package a\n\n// On the H100: 3 ms.\nfunc TestX() {}\n",
		"internal/b/b.go":       "package b\n\n// On the H100: 3 ms.\nfunc B() {}\n",
		"glcompute/tuning/t.go": "package tuning\n\n// Fitted on an H200.\nconst Fit = 1\n",
	})
	vs, _ := mustCheck(t, root)
	const tail = " without a link to docs/: move the measurement there"
	wantViolations(t, vs,
		`glcompute/a.go:11: comment names a GPU or a timing ("H100")`+tail,
		`glcompute/a.go:14: comment names a GPU or a timing ("RTX 4090")`+tail,
		`glcompute/a.go:18: comment names a GPU or a timing ("0.229 ms")`+tail,
		`glcompute/a.go:21: comment names a GPU or a timing ("15 µs")`+tail,
		`glcompute/a.go:24: comment names a GPU or a timing ("14.1 GB/s")`+tail,
		`glcompute/a.go:26: comment names a GPU or a timing ("3.2 ms")`+tail,
		`glcompute/a.go:29: comment names a GPU or a timing ("19 GFLOPS")`+tail,
		`glcompute/a.go:31: comment names a GPU or a timing ("0.5 s")`+tail,
		`glcompute/a.go:33: comment names a GPU or a timing ("23.4µs")`+tail,
		`glcompute/a.go:35: comment names a GPU or a timing ("2 ns")`+tail,
		`glcompute/tuning/t.go:3: comment names a GPU or a timing ("H200")`+tail,
	)
}

func TestPackageDocLength(t *testing.T) {
	root := writeTree(t, map[string]string{
		"glcompute/doc.go":        fileOfLines("glcompute", 81),
		"glcompute/tuning/doc.go": fileOfLines("tuning", 80),
		"glcompute/glfw/doc.go":   strings.TrimSuffix(fileOfLines("glfw", 81), "\n"),
		"glcompute/notdoc.go":     fileOfLines("glcompute", 81),
		"validate/doc.go":         fileOfLines("validate", 120),
	})
	vs, _ := mustCheck(t, root)
	wantViolations(t, vs,
		"glcompute/doc.go:1: doc.go has 81 lines, over 80: move the detail to docs/",
		"glcompute/glfw/doc.go:1: doc.go has 81 lines, over 80: move the detail to docs/",
	)
}
