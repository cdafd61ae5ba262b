package main

import (
	"cmp"
	"go/ast"
	"regexp"
	"strings"
	"unicode"
)

// The comment rules hold for the library's non-test files (issue 44, "A
// small front door"): a doc comment is a contract, saying what an
// identifier computes, what it panics on and its thread rule in a few
// lines; the measurements behind a choice (the GPU, the figures, the date)
// and drivers' stories live in docs/, linked from the code in one line.
const (
	// libraryDir is the directory, relative to the root, whose non-test
	// files the comment rules apply to (itself and every directory below).
	libraryDir = "glcompute"

	// maxDocLines is the most lines an exported identifier's doc comment
	// may have.
	maxDocLines = 12

	// maxPackageDocLines is the most lines a doc.go file (a package's
	// documentation) may have.
	maxPackageDocLines = 80

	// docsLink is what a comment must contain to count as linking to the
	// repository's documentation.
	docsLink = "docs/"
)

// measured matches what marks a comment line as a measurement: a GPU model
// by name, or a timing, a number with a unit of time or of rate (ms, µs or
// us, ns, s; TFLOPS, GFLOPS; GB/s, MB/s, GiB/s, MiB/s), a space between
// them or not, a range such as "10–15 µs" included. Sizes ("1 MiB"),
// counts ("4 slices") and equations ("K = 262140") are not measurements,
// nor are bare vendor names (NVIDIA, Mesa llvmpipe), which choose code
// paths. A bare "s" counts only after a number and a space ("0.5 s"), so
// that "2s" in "2s complement" or "128s" do not.
var measured = regexp.MustCompile(
	`\b(H100|H200|GH200|A100|V100|B200|Quadro|GeForce|Radeon|(RTX|GTX) ?\d{3,4})\b` +
		`|\b\d+(\.\d+)? ?(ms|µs|us|ns|[TG]FLOPS|[GM]i?B/s)(\W|$)` +
		`|\b\d+(\.\d+)? s\b`)

// checkComments applies the comment rules to a non-test file under
// libraryDir:
//
//   - a doc.go (the package's documentation) over maxPackageDocLines lines;
//   - an exported identifier's doc comment over maxDocLines lines: exported
//     functions, methods of exported types, types, the exported fields and
//     methods of exported struct and interface types, consts and vars, and
//     a parenthesized declaration's own doc comment where it declares
//     anything exported;
//   - a comment (a group of adjacent line comments, or a block comment, doc
//     comment or not) with a line that measured matches, where the comment
//     does not contain docsLink anywhere. A figure may stay beside its link:
//     a contract's value ("500 ms by default") with the docs/ section that
//     explains it. Reported once a comment, at its first such line.
func (c *checker) checkComments(rel string, f *ast.File, lines int) {
	if strings.HasSuffix(rel, "_test.go") || matchLen(libraryDir+"/...", dirOf(rel)) < 0 {
		return
	}
	if strings.HasSuffix(rel, "/doc.go") {
		if lines > maxPackageDocLines {
			c.add(rel, 1, "doc.go has %d lines, over %d: move the detail to docs/", lines, maxPackageDocLines)
		}
	}
	for _, d := range exportedDocs(f) {
		if n := c.lineSpan(d.doc); n > maxDocLines {
			c.add(rel, c.fset.Position(d.doc.Pos()).Line,
				"doc comment of %s has %d lines, over %d: say what and why, link the measurements in docs/",
				d.name, n, maxDocLines)
		}
	}
	for _, g := range f.Comments {
		text := g.Text()
		if strings.Contains(text, docsLink) {
			continue
		}
		for _, cm := range g.List {
			if m := measured.FindString(cm.Text); m != "" {
				c.add(rel, c.fset.Position(cm.Pos()).Line,
					"comment names a GPU or a timing (%q) without a link to docs/: move the measurement there",
					strings.TrimRightFunc(m, notUnit))
				break // one report a comment: one link serves it all
			}
		}
	}
}

// notUnit reports whether r, at the end of a match of measured, is the
// character after a unit that measured matches rather than part of it.
func notUnit(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/' }

// lineSpan is how many lines a comment group spans.
func (c *checker) lineSpan(g *ast.CommentGroup) int {
	return c.fset.Position(g.End()).Line - c.fset.Position(g.Pos()).Line + 1
}

// namedDoc is the doc comment of an exported identifier, with its name as
// messages give it.
type namedDoc struct {
	name string
	doc  *ast.CommentGroup
}

// exportedDocs lists the doc comments of a file's exported identifiers:
// functions, methods of exported types, types, fields and interface
// methods of exported types, consts and vars, and a parenthesized
// declaration's own doc comment where it declares anything exported.
func exportedDocs(f *ast.File) []namedDoc {
	var docs []namedDoc
	add := func(name string, doc *ast.CommentGroup) {
		if doc != nil {
			docs = append(docs, namedDoc{name, doc})
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || ast.IsExported(recvTypeName(d.Recv.List[0].Type))) {
				add(funcName(d), d.Doc)
			}
		case *ast.GenDecl:
			docs = append(docs, genDeclDocs(d)...)
		}
	}
	return docs
}

// genDeclDocs lists the doc comments of a type, const or var declaration's
// exported identifiers, and a parenthesized declaration's own doc comment
// where it declares anything exported.
func genDeclDocs(d *ast.GenDecl) []namedDoc {
	var docs []namedDoc
	add := func(name string, doc *ast.CommentGroup) {
		if doc != nil {
			docs = append(docs, namedDoc{name, doc})
		}
	}
	first := "" // the first exported name the declaration declares
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			if !s.Name.IsExported() {
				continue
			}
			first = cmp.Or(first, s.Name.Name)
			add(s.Name.Name, s.Doc)
			docs = append(docs, fieldDocs(s.Name.Name, s.Type)...)
		case *ast.ValueSpec:
			for _, n := range s.Names {
				if n.IsExported() {
					first = cmp.Or(first, n.Name)
					add(n.Name, s.Doc)
					break
				}
			}
		}
	}
	if first != "" {
		name := first // an unparenthesized declaration's doc is its spec's
		if d.Lparen.IsValid() {
			name = d.Tok.String() + " block of " + first
		}
		add(name, d.Doc)
	}
	return docs
}

// fieldDocs lists the doc comments of the exported fields of a struct type
// and the methods of an interface type named typeName.
func fieldDocs(typeName string, t ast.Expr) []namedDoc {
	var list *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	}
	if list == nil {
		return nil
	}
	var docs []namedDoc
	for _, fld := range list.List {
		name := ""
		for _, n := range fld.Names {
			if n.IsExported() {
				name = n.Name
				break
			}
		}
		if len(fld.Names) == 0 {
			name = recvTypeName(fld.Type) // an embedded field or interface
			if !ast.IsExported(name) {
				name = ""
			}
		}
		if name != "" && fld.Doc != nil {
			docs = append(docs, namedDoc{typeName + "." + name, fld.Doc})
		}
	}
	return docs
}
