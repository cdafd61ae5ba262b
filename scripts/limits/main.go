// Command limits enforces the repository's house rules on size and layering.
//
// Usage, from the repository root (as CI runs it):
//
//	go run ./scripts/limits .
//
// It walks every *.go file under the given root, skipping directories named
// testdata, examples, vendor and bin and every directory whose name starts
// with a dot, and reports each violation on its own line as
// "path:line: message", path relative to the root and slash-separated:
//
//   - a file other than a test over maxFileLines lines (a test file
//     follows the API it tests, and splitting it by count scatters the
//     tests of one concept);
//   - a top-level function or method of a non-test file over maxFuncLines
//     lines, counted from its func keyword to its closing brace (doc comments
//     excluded);
//   - an import of this module's packages that points up the layer table
//     below (test files included, external test packages too);
//   - under libraryDir, in a non-test file: an exported identifier's doc
//     comment over maxDocLines lines, a comment that names a GPU model or
//     gives a timing without linking to docs/, and a doc.go over
//     maxPackageDocLines lines (see comments.go: doc comments are
//     contracts, measurements live in docs/).
//
// It exits 1 if it reported anything; otherwise it prints a one-line summary
// and exits 0. It exits 2 on a usage error or when the tree cannot be read or
// parsed.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// layers is the layer table: the single place that defines the layering.
//
// A package may import packages of its own layer or of lower layers, never of
// a higher one. A package's layer is given by its directory relative to the
// repository root (for an import path, the path with modulePath stripped):
// the row whose pattern matches that directory most specifically (longest)
// wins. "dir/..." matches dir itself and every directory below it; a pattern
// without "/..." matches only that directory. Directories that no pattern
// matches (scripts/..., bench/..., the root itself) are outside the layering:
// neither their imports nor imports of them are checked.
var layers = []layer{
	// Highest layer first.
	{rank: 5, name: "cmd", patterns: []string{
		"cmd/...", // cmd/glmul itself and any other cmd/X (but see cli-internal)
	}},
	{rank: 4, name: "cli-internal", patterns: []string{
		"cmd/glmul/internal/...", // packages private to the glmul command
	}},
	{rank: 3, name: "library", patterns: []string{
		"glcompute/...",       // glcompute and glcompute/glfw: glcompute/X, X not internal
		"internal/gltest/...", // the test device every package above glcompute opens
	}},
	{rank: 2, name: "library-internal", patterns: []string{
		"glcompute/internal/...", // the library's private packages
		"internal/...",           // the module's shared private packages
	}},
	{rank: 1, name: "base", patterns: []string{
		"shaders/...",  // the GLSL compute shaders
		"validate/...", // checking a product against float64 arithmetic
		"cpu/...",      // products on the CPU
	}},
}

const (
	// modulePath is stripped from import paths to find the imported
	// package's directory; imports outside it are ignored.
	modulePath = "github.com/glmul/glmul"

	// maxFileLines is the most lines a .go file may have.
	maxFileLines = 600

	// maxFuncLines is the most lines a non-test function may have.
	maxFuncLines = 64
)

// skippedDirs are directory names never walked into (besides dot
// directories).
var skippedDirs = map[string]bool{
	"testdata": true,
	"examples": true,
	"vendor":   true,
	"bin":      true,
}

// layer is one row of the layer table.
type layer struct {
	rank     int      // higher ranks sit above lower ones
	name     string   // readable name used in messages
	patterns []string // directories, relative to the root, in this layer
}

// violation is one broken rule at one place.
type violation struct {
	path string // relative to the root, slash-separated
	line int
	msg  string
}

// String formats v as "path:line: message".
func (v violation) String() string {
	return fmt.Sprintf("%s:%d: %s", v.path, v.line, v.msg)
}

// extent records the longest function or file seen so far.
type extent struct {
	lines int
	path  string
	name  string // function name; empty for files
}

// stats summarises a clean run.
type stats struct {
	files       int    // .go files considered
	funcs       int    // non-test functions with a body measured
	longestFunc extent // longest of those functions
	longestFile extent // longest of those files
}

// summary is the line printed when the tree passes.
func (s stats) summary() string {
	fn := "none"
	if s.longestFunc.path != "" {
		fn = fmt.Sprintf("%d lines in %s (%s)", s.longestFunc.lines, s.longestFunc.path, s.longestFunc.name)
	}
	file := "none"
	if s.longestFile.path != "" {
		file = fmt.Sprintf("%d lines in %s", s.longestFile.lines, s.longestFile.path)
	}
	return fmt.Sprintf("limits: ok (%d files, %d functions, longest function %s, longest file %s)",
		s.files, s.funcs, fn, file)
}

func main() {
	args := os.Args[1:]
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/limits ROOT")
		os.Exit(2)
	}
	vs, st, err := check(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "limits: %v\n", err)
		os.Exit(2)
	}
	for _, v := range vs {
		fmt.Println(v)
	}
	if len(vs) > 0 {
		fmt.Fprintf(os.Stderr, "limits: %d violation(s)\n", len(vs))
		os.Exit(1)
	}
	fmt.Println(st.summary())
}

// check applies every rule to the .go files under root and returns the
// violations sorted by path, line and message, with statistics of the tree.
func check(root string) ([]violation, stats, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, stats{}, err
	}
	if !info.IsDir() {
		return nil, stats{}, fmt.Errorf("%s is not a directory", root)
	}
	files, err := goFiles(root)
	if err != nil {
		return nil, stats{}, err
	}
	c := &checker{root: root, fset: token.NewFileSet()}
	for _, rel := range files {
		if err := c.checkFile(rel); err != nil {
			return nil, stats{}, err
		}
	}
	sortViolations(c.violations)
	return c.violations, c.stats, nil
}

// goFiles lists the .go files under root that the rules apply to, as
// slash-separated paths relative to root, in lexical order.
func goFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, err
}

// skipDir reports whether a directory with this name is left out.
func skipDir(name string) bool {
	return skippedDirs[name] || strings.HasPrefix(name, ".")
}

// checker accumulates violations and statistics over one tree.
type checker struct {
	root       string
	fset       *token.FileSet
	violations []violation
	stats      stats
}

// add records a violation.
func (c *checker) add(path string, line int, format string, args ...any) {
	c.violations = append(c.violations, violation{path, line, fmt.Sprintf(format, args...)})
}

// checkFile applies every rule to the file at rel (relative to the root).
func (c *checker) checkFile(rel string) error {
	data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	c.checkFileLength(rel, countLines(data))
	f, err := parser.ParseFile(c.fset, rel, data, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(rel, "_test.go") {
		c.checkFuncs(rel, f)
	}
	c.checkImports(rel, f)
	c.checkComments(rel, f, countLines(data))
	return nil
}

// countLines counts the lines of a file: its newlines, plus one for a last
// line that does not end in a newline.
func countLines(data []byte) int {
	s := string(data)
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// checkFileLength applies rule 1: no file but a test over maxFileLines
// lines.
func (c *checker) checkFileLength(rel string, lines int) {
	c.stats.files++
	if strings.HasSuffix(rel, "_test.go") {
		return
	}
	if lines > c.stats.longestFile.lines {
		c.stats.longestFile = extent{lines: lines, path: rel}
	}
	if lines > maxFileLines {
		c.add(rel, 1, "file has %d lines, over %d: split it by concern", lines, maxFileLines)
	}
}

// checkFuncs applies rule 2 to a non-test file: no top-level function with
// a body over maxFuncLines lines.
func (c *checker) checkFuncs(rel string, f *ast.File) {
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start := c.fset.Position(fn.Type.Func).Line
		lines := c.fset.Position(fn.Body.Rbrace).Line - start + 1
		name := funcName(fn)
		c.stats.funcs++
		if lines > c.stats.longestFunc.lines {
			c.stats.longestFunc = extent{lines: lines, path: rel, name: name}
		}
		if lines > maxFuncLines {
			c.add(rel, start, "func %s has %d lines, over %d", name, lines, maxFuncLines)
		}
	}
}

// funcName names a function as messages do: Recv.Method for a method (its
// receiver type without pointer or type parameters), else the function name.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	return recvTypeName(fn.Recv.List[0].Type) + "." + fn.Name.Name
}

// recvTypeName returns the name of a receiver's base type.
func recvTypeName(expr ast.Expr) string {
	switch t := expr.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return recvTypeName(t.X)
	case *ast.ParenExpr:
		return recvTypeName(t.X)
	case *ast.IndexExpr:
		return recvTypeName(t.X)
	case *ast.IndexListExpr:
		return recvTypeName(t.X)
	}
	return "?"
}

// checkImports applies rule 3: a file's imports of this module's packages
// point to its own layer or lower ones.
func (c *checker) checkImports(rel string, f *ast.File) {
	from, ok := layerOf(dirOf(rel))
	if !ok {
		return
	}
	for _, imp := range f.Imports {
		pkg := strings.Trim(imp.Path.Value, "\"`")
		dir, ok := moduleDir(pkg)
		if !ok {
			continue
		}
		to, ok := layerOf(dir)
		if !ok || to.rank <= from.rank {
			continue
		}
		line := c.fset.Position(imp.Path.Pos()).Line
		c.add(rel, line, "imports %s (layer %q above this file's layer %q): imports must point down",
			pkg, to.name, from.name)
	}
}

// dirOf returns the slash-separated directory of a slash-separated file
// path; "" for a file at the root.
func dirOf(rel string) string {
	i := strings.LastIndex(rel, "/")
	if i < 0 {
		return ""
	}
	return rel[:i]
}

// moduleDir returns the directory, relative to the root, of an import path
// inside this module, and false for an import path outside it.
func moduleDir(pkg string) (string, bool) {
	if pkg == modulePath {
		return "", true
	}
	rest, ok := strings.CutPrefix(pkg, modulePath+"/")
	return rest, ok
}

// layerOf returns the layer of the most specific pattern that matches dir,
// and false when dir is outside the layering.
func layerOf(dir string) (layer, bool) {
	var best layer
	bestLen := -1
	for _, l := range layers {
		for _, p := range l.patterns {
			if n := matchLen(p, dir); n > bestLen {
				best, bestLen = l, n
			}
		}
	}
	return best, bestLen >= 0
}

// matchLen returns how specific a match of pattern against dir is (the
// length of the pattern's directory), or -1 when it does not match.
func matchLen(pattern, dir string) int {
	base, tree := strings.CutSuffix(pattern, "/...")
	if dir == base || (tree && strings.HasPrefix(dir, base+"/")) {
		return len(base)
	}
	return -1
}

// sortViolations orders violations by path, then line, then message.
func sortViolations(vs []violation) {
	sort.Slice(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.path != b.path {
			return a.path < b.path
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return a.msg < b.msg
	})
}
