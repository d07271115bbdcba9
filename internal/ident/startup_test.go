package ident_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
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
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					if call, ok := v.(*ast.CallExpr); ok && isRegexpCompile(call.Fun) {
						t.Errorf("%s: a package-level regexp, compiled at every start: use internal/ident or sync.OnceValue",
							fset.Position(call.Pos()))
					}
				}
			}
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

func isRegexpCompile(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "regexp" && strings.HasPrefix(sel.Sel.Name, "MustCompile")
}
