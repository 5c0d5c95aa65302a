// Command apicheck compares the exported API of profilekit's stable packages
// with a committed baseline, using golang.org/x/exp/apidiff.
//
// A package is checked when its doc.go has a "# Stability" section (the
// sections internal/stability keeps true). Only the names that section calls
// stable count: an incompatible change is reported when it touches a name
// linked ([Name]) before the word "Experimental", unless it touches a member
// linked as experimental ([Type.Member] after that word). A section with no
// Experimental list covers its package whole when it says "Stable under
// semver" (the Profile types), and not at all otherwise (generated mocks,
// examples).
//
// The baseline holds one file per package, in the format that
// `apidiff -w` writes, so apidiff itself can read it. Run from the module
// root:
//
//	apicheck -baseline hack/apicheck/baseline        # check
//	apicheck -baseline hack/apicheck/baseline -w     # rewrite the baseline
//
// A check also guards the baseline itself: when the baseline holds an
// incompatible change against its previous version (the uncommitted change,
// or else the last commit that changed it), that change must add a line to
// CHANGELOG.md's "Breaking changes" section.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"
)

const changelog = "CHANGELOG.md"

func main() {
	baseline := flag.String("baseline", "hack/apicheck/baseline", "directory of the baseline, relative to the module root")
	write := flag.Bool("w", false, "write the baseline from the current API instead of checking")
	flag.Parse()
	if err := run(*baseline, *write, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
}

// stablePackage is a package with a Stability section, and what it calls stable.
type stablePackage struct {
	dir  string // relative to the module root, slash-separated
	path string // import path
	// whole is set when the package is stable as a whole.
	whole bool
	// stable and experimental are the names the section links.
	stable, experimental []string
}

// counts reports whether an apidiff message speaks of a stable name.
func (p stablePackage) counts(msg string) bool {
	if p.whole {
		return true
	}
	m := messageName.FindStringSubmatch(msg)
	if m == nil {
		return true // a message this check cannot place counts
	}
	if !slices.Contains(p.stable, m[1]) {
		return false
	}
	return m[2] == "" || !slices.Contains(p.experimental, m[1]+"."+m[2])
}

// messageName matches the object an apidiff message names: Name, T.Member
// or (*T).Member.
var messageName = regexp.MustCompile(`^\(?\*?([A-Za-z_][A-Za-z0-9_]*)\)?(?:\.([A-Za-z_][A-Za-z0-9_]*))?`)

// docLink matches a Go doc link to a name of the package itself, as
// internal/stability reads them.
var docLink = regexp.MustCompile(`\[([A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)?)\]`)

func run(baseline string, write bool, out io.Writer) error {
	module, err := goList("-m")
	if err != nil {
		return err
	}
	pkgs, err := stablePackages(module)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	cfg := &packages.Config{Fset: fset, Mode: packages.NeedName | packages.NeedTypes}
	var patterns []string
	for _, p := range pkgs {
		patterns = append(patterns, p.path)
	}
	loaded, err := packages.Load(cfg, patterns...)
	if err != nil {
		return err
	}
	current := map[string]*types.Package{}
	for _, l := range loaded {
		if len(l.Errors) > 0 {
			return fmt.Errorf("loading %s: %v", l.PkgPath, l.Errors[0])
		}
		current[l.PkgPath] = l.Types
	}

	if write {
		if err := os.RemoveAll(baseline); err != nil {
			return err
		}
		for _, p := range pkgs {
			if err := writeExport(filepath.Join(baseline, p.dir+".api"), fset, current[p.path]); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "wrote the API of %d stable packages to %s\n", len(pkgs), baseline)
		return nil
	}

	var problems []string
	for _, p := range pkgs {
		file := filepath.Join(baseline, p.dir+".api")
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("%s: no baseline (%s)", p.path, file))
			continue
		} else if err != nil {
			return err
		}
		old, err := readExport(data)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, msg := range incompatible(p, old, current[p.path]) {
			problems = append(problems, p.path+": "+msg)
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(out, p)
		}
		return fmt.Errorf("%d incompatible change(s) to stable names against %s: if the break is meant, run make apibaseline and add a line to CHANGELOG.md's \"Breaking changes\" in the same commit", len(problems), baseline)
	}
	if err := checkBaselineChange(baseline, pkgs, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "apicheck: the stable API of %d packages matches %s\n", len(pkgs), baseline)
	return nil
}

// incompatible returns the incompatible changes from before to after that speak
// of stable names.
func incompatible(p stablePackage, before, after *types.Package) []string {
	var msgs []string
	for _, c := range apidiff.Changes(before, after).Changes {
		if !c.Compatible && p.counts(c.Message) {
			msgs = append(msgs, c.Message)
		}
	}
	return msgs
}

// checkBaselineChange fails when the baseline's last change (uncommitted, or
// else the last commit that touched it) breaks a stable name and CHANGELOG.md's
// Breaking changes section gained no line with it.
func checkBaselineChange(baseline string, pkgs []stablePackage, out io.Writer) error {
	status, err := git("status", "--porcelain", "--", baseline)
	if err != nil {
		fmt.Fprintf(out, "apicheck: not checking the baseline's history (%v)\n", err)
		return nil // not a git work tree: a source archive has no history to check
	}
	base, head := "HEAD", "" // "" is the work tree
	if strings.TrimSpace(status) == "" {
		last, err := git("log", "-1", "--format=%H", "--", baseline)
		if err != nil {
			return err
		}
		last = strings.TrimSpace(last)
		if last == "" {
			return nil
		}
		base, head = last+"^", last
	}
	var breaks []string
	for _, p := range pkgs {
		file := filepath.ToSlash(filepath.Join(baseline, p.dir+".api"))
		before, err := gitShow(base, file)
		if err != nil {
			continue // no earlier baseline of this package
		}
		after, err := gitShow(head, file)
		if err != nil {
			continue
		}
		if bytes.Equal(before, after) {
			continue
		}
		oldPkg, err := readExport(before)
		if err != nil {
			return fmt.Errorf("%s at %s: %w", file, base, err)
		}
		newPkg, err := readExport(after)
		if err != nil {
			return err
		}
		for _, msg := range incompatible(p, oldPkg, newPkg) {
			breaks = append(breaks, p.path+": "+msg)
		}
	}
	if len(breaks) == 0 {
		return nil
	}
	oldLog, _ := gitShow(base, changelog)
	newLog, err := gitShow(head, changelog)
	if err != nil {
		return err
	}
	if added(breakingLines(oldLog), breakingLines(newLog)) {
		return nil
	}
	for _, b := range breaks {
		fmt.Fprintln(out, b)
	}
	where := "the uncommitted baseline"
	if head != "" {
		where = "commit " + head[:12]
	}
	return fmt.Errorf("%s breaks %d stable name(s) but adds no line to CHANGELOG.md's \"Breaking changes\" section: say there what broke and how to move", where, len(breaks))
}

// breakingLines returns the non-empty lines of the changelog's first
// section whose heading starts with "### Breaking changes".
func breakingLines(log []byte) []string {
	var lines []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			if in {
				break
			}
			in = strings.HasPrefix(line, "### Breaking changes")
			continue
		}
		if in && strings.TrimSpace(line) != "" {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}

// added reports whether after holds a line that before does not.
func added(before, after []string) bool {
	for _, l := range after {
		if !slices.Contains(before, l) {
			return true
		}
	}
	return false
}

// stablePackages finds the packages whose doc.go has a Stability section
// that makes anything stable, in a stable order.
func stablePackages(module string) ([]stablePackage, error) {
	var pkgs []stablePackage
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin" || name == "node_modules" || name == "hack") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != "." && err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if d.Name() != "doc.go" {
			return nil
		}
		p, ok, err := readSection(path)
		if err != nil || !ok {
			return err
		}
		p.dir = filepath.ToSlash(filepath.Dir(path))
		p.path = module + "/" + p.dir
		if p.whole || len(p.stable) > 0 {
			pkgs = append(pkgs, p)
		}
		return nil
	})
	slices.SortFunc(pkgs, func(a, b stablePackage) int { return strings.Compare(a.dir, b.dir) })
	return pkgs, err
}

// readSection reads the Stability section of the package doc in path.
func readSection(path string) (stablePackage, bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return stablePackage{}, false, err
	}
	if f.Doc == nil || ast.IsGenerated(f) {
		return stablePackage{}, false, nil
	}
	_, after, ok := strings.Cut(f.Doc.Text(), "\n# Stability\n")
	if !ok {
		return stablePackage{}, false, nil
	}
	if next := strings.Index(after, "\n# "); next >= 0 {
		after = after[:next]
	}
	stable, experimental, ok := strings.Cut(after, "Experimental")
	if !ok {
		return stablePackage{whole: strings.Contains(after, "Stable under semver")}, true, nil
	}
	return stablePackage{stable: links(stable), experimental: links(experimental)}, true, nil
}

func links(s string) []string {
	var out []string
	for _, m := range docLink.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// writeExport writes pkg's export data in the format of `apidiff -w`: the
// package path on a line, then the export data.
func writeExport(file string, fset *token.FileSet, pkg *types.Package) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	fmt.Fprintln(&buf, pkg.Path())
	if err := gcexportdata.Write(&buf, fset, pkg); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}

// readExport reads what writeExport wrote.
func readExport(data []byte) (*types.Package, error) {
	r := bufio.NewReader(bytes.NewReader(data))
	path, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	return gcexportdata.Read(r, token.NewFileSet(), map[string]*types.Package{}, strings.TrimSuffix(path, "\n"))
}

func goList(args ...string) (string, error) {
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// gitShow returns file at rev, or in the work tree when rev is "".
func gitShow(rev, file string) ([]byte, error) {
	if rev == "" {
		return os.ReadFile(file)
	}
	return exec.Command("git", "show", rev+":"+file).Output()
}
