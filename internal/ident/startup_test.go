package ident_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// TestNoRegexpCompiledAtStart: no package of scribe compiles a regexp in a
// package-level variable, which every process start would pay for before
// main (a bounded repetition such as {1,128} alone costs thousands of
// allocations). Checks go through this package; other patterns compile on
// first use.
func TestNoRegexpCompiledAtStart(t *testing.T) {
	root := testenv.RepoRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", "zz_scratch", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, at := range startupCompiles(f) {
			t.Errorf("%s: a regexp compiled at every start: use internal/ident, or compile on first use (sync.OnceValue)",
				fset.Position(at))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: not the repository", files, root)
	}
}

// startupCompiles returns where f compiles a regexp before main: in the
// value of a package-level variable (a function literal called there
// included) or in an init function, but not inside a function literal
// that is only stored, or handed to sync.OnceValue, OnceValues or OnceFunc.
func startupCompiles(f *ast.File) []token.Pos {
	name := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"regexp"` {
			name = "regexp"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" {
		return nil
	}
	var at []token.Pos
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // stored, not run: unless called (below)
		case *ast.CallExpr:
			if isOnce(n.Fun) {
				return false
			}
			if lit, ok := n.Fun.(*ast.FuncLit); ok {
				ast.Inspect(lit.Body, visit)
				for _, a := range n.Args {
					ast.Inspect(a, visit)
				}
				return false
			}
			if isCompile(n.Fun, name) {
				at = append(at, n.Pos())
			}
		}
		return true
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			if d.Tok == token.VAR {
				for _, spec := range d.Specs {
					for _, v := range spec.(*ast.ValueSpec).Values {
						ast.Inspect(v, visit)
					}
				}
			}
		case *ast.FuncDecl:
			if d.Name.Name == "init" && d.Recv == nil && d.Body != nil {
				ast.Inspect(d.Body, visit)
			}
		}
	}
	return at
}

func isOnce(fun ast.Expr) bool {
	if ix, ok := fun.(*ast.IndexExpr); ok { // sync.OnceValue[T]
		fun = ix.X
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "sync" && (sel.Sel.Name == "OnceValue" || sel.Sel.Name == "OnceValues" || sel.Sel.Name == "OnceFunc")
}

func isCompile(fun ast.Expr, regexpName string) bool {
	var fn string
	switch f := fun.(type) {
	case *ast.SelectorExpr:
		pkg, ok := f.X.(*ast.Ident)
		if !ok || pkg.Name != regexpName {
			return false
		}
		fn = f.Sel.Name
	case *ast.Ident:
		if regexpName != "." {
			return false
		}
		fn = f.Name
	default:
		return false
	}
	switch fn {
	case "Compile", "CompilePOSIX", "MustCompile", "MustCompilePOSIX":
		return true
	}
	return false
}

// The check finds every way of compiling at start it knows of, and none
// of the ways that wait for first use.
func TestStartupCompilesFindsEachForm(t *testing.T) {
	src := `package x

import (
	re "regexp"
	"sync"
)

var a = re.MustCompile("a")
var b = func() *re.Regexp { return re.MustCompile("b") }()
var c = []*re.Regexp{re.MustCompile("c")}
var d, _ = re.Compile("d")
var e = re.MustCompilePOSIX("e").Longest
var m = map[string]*re.Regexp{"f": re.MustCompile("f")}
var g *re.Regexp

func init() { g = re.MustCompile("g") }

// Not at start:
var lazy = sync.OnceValue(func() *re.Regexp { return re.MustCompile("lazy") })
var stored = func() *re.Regexp { return re.MustCompile("stored") }

func use() *re.Regexp { return re.MustCompile("use") }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, at := range startupCompiles(f) {
		got = append(got, fset.Position(at).Line)
	}
	if want := []int{8, 9, 10, 11, 12, 13, 16}; !slices.Equal(got, want) {
		t.Fatalf("found compiles at start on lines %v, want %v", got, want)
	}
}
