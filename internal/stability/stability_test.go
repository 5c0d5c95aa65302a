package stability_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docLink matches a Go doc link to a name of the package itself: [Name] or
// [Type.Member]. A link to another package ([pkg.Name]) is written in lower
// case first and so never matches.
var docLink = regexp.MustCompile(`\[([A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)?)\]`)

// exports is what a package exports: its top-level names, and the methods
// and fields of each of its types.
type exports struct {
	names   map[string]bool
	members map[string]map[string]bool
}

// has reports whether link ("Name" or "Type.Member") names an export.
func (e exports) has(link string) bool {
	typ, member, ok := strings.Cut(link, ".")
	if !ok {
		return e.names[link]
	}
	return e.names[typ] && e.members[typ][member]
}

// section is a package's Stability section, split at "Experimental".
type section struct {
	stable, experimental string
}

func TestStabilityListsMatchExports(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "doc.go" {
			return nil
		}
		dir := filepath.Dir(path)
		rel, _ := filepath.Rel(root, dir)
		sec, ok := stabilitySection(t, path)
		if !ok {
			return nil
		}
		checked++
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			if len(links(sec.stable))+len(links(sec.experimental)) == 0 {
				t.Fatal("doc.go's Stability section names no exported name as a doc link ([Name]): write them so, so that this test can check them")
			}
			checkPackage(t, dir, sec)
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("found no package whose doc.go has a Stability section with an Experimental list")
	}
}

func checkPackage(t *testing.T, dir string, sec section) {
	exp := packageExports(t, dir)
	stable := links(sec.stable)
	experimental := links(sec.experimental)
	if len(stable)+len(experimental) == 0 {
		t.Fatalf("doc.go's Stability section links no name: write the names it lists as doc links, [Name] or [Type.Member]")
	}
	for _, l := range stable {
		if !exp.has(l) {
			t.Errorf("[%s] is listed as stable in doc.go but the package no longer exports it: update the Stability list, and say in CHANGELOG.md what broke", l)
		}
	}
	for _, l := range experimental {
		if !exp.has(l) {
			t.Errorf("[%s] is listed as experimental in doc.go but the package no longer exports it: update the Stability list", l)
		}
	}
	listed := map[string]bool{}
	for _, l := range append(stable, experimental...) {
		if !strings.Contains(l, ".") {
			listed[l] = true
		}
	}
	var unlisted []string
	for name := range exp.names {
		if !listed[name] {
			unlisted = append(unlisted, name)
		}
	}
	if len(unlisted) > 0 {
		slices.Sort(unlisted)
		t.Errorf("exported but in neither list of doc.go's Stability section: %s; link each from the stable list (and say so in CHANGELOG.md) or from the experimental one", strings.Join(unlisted, ", "))
	}
}

// stabilitySection returns the Stability section of the package doc in
// path, when it has one with an Experimental list.
func stabilitySection(t *testing.T, path string) (section, bool) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		return section{}, false
	}
	text := f.Doc.Text()
	_, after, ok := strings.Cut(text, "\n# Stability\n")
	if !ok {
		return section{}, false
	}
	if next := strings.Index(after, "\n# "); next >= 0 {
		after = after[:next]
	}
	stable, experimental, ok := strings.Cut(after, "Experimental")
	if !ok {
		return section{}, false
	}
	return section{stable: stable, experimental: experimental}, true
}

// links returns the doc links of s, in order and without repeats.
func links(s string) []string {
	var out []string
	for _, m := range docLink.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// packageExports reads the exports of the package in dir from its non-test
// Go files.
func packageExports(t *testing.T, dir string) exports {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := exports{names: map[string]bool{}, members: map[string]map[string]bool{}}
	member := func(typ, name string) {
		if !ast.IsExported(name) {
			return
		}
		if e.members[typ] == nil {
			e.members[typ] = map[string]bool{}
		}
		e.members[typ][name] = true
	}
	fset := token.NewFileSet()
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					if d.Name.IsExported() {
						e.names[d.Name.Name] = true
					}
					continue
				}
				member(receiverType(d.Recv.List[0].Type), d.Name.Name)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						e.names[s.Name.Name] = true
						typeMembers(s.Name.Name, s.Type, member)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								e.names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return e
}

// typeMembers adds the fields of a struct type and the methods of an
// interface type, embedded ones by their type's name.
func typeMembers(typ string, expr ast.Expr, member func(typ, name string)) {
	var fields *ast.FieldList
	switch x := expr.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			member(typ, receiverType(f.Type))
			continue
		}
		for _, n := range f.Names {
			member(typ, n.Name)
		}
	}
}

// receiverType returns the name of the type in a receiver or an embedded
// field: T, *T, T[P] or pkg.T.
func receiverType(expr ast.Expr) string {
	switch x := expr.(type) {
	case *ast.StarExpr:
		return receiverType(x.X)
	case *ast.IndexExpr:
		return receiverType(x.X)
	case *ast.IndexListExpr:
		return receiverType(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// repoRoot returns the folder of go.mod, above the test's own.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
