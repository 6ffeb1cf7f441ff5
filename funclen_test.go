package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a production function, from its func line to its closing brace: a
// longer one does several things and reads better as named steps.
const maxFuncLines = 80

// longFuncsAllowed are functions still over the bound, as "file:name": none.
var longFuncsAllowed = map[string]bool{}

// TestFunctionLength fails naming each non-test function of the module over maxFuncLines.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			key := filepath.ToSlash(path) + ":" + fd.Name.Name
			switch {
			case lines > maxFuncLines && !longFuncsAllowed[key]:
				t.Errorf("%s is %d lines; split it to at most %d", key, lines, maxFuncLines)
			case lines > maxFuncLines:
				seen[key] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range longFuncsAllowed {
		if !seen[key] {
			t.Errorf("%s is allowed over %d lines but is not (or is gone): remove it from longFuncsAllowed", key, maxFuncLines)
		}
	}
}
