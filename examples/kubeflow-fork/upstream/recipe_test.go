package upstream_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/profilekit/profilekit/internal/testenv"
)

// recipeBlock is a Go block of the README: the lines a fork adds to one of
// upstream's files, at the place the header names. Lines "// ..." stand for
// lines of the fork's own, so a block is groups of lines, each of which
// appears in the file unbroken, in order.
type recipeBlock struct {
	file, where string
	groups      [][]string
}

// standIn maps upstream's files to the stand-in's.
var standIn = map[string]string{
	"controllers/profile_controller.go": "profile_controller.go",
	"main.go":                           "main.go",
}

var blockHeader = regexp.MustCompile(`^// (\S+\.go): (.+)$`)

// readRecipe returns the README's Go blocks.
func readRecipe(t *testing.T, readme string) []recipeBlock {
	t.Helper()
	var blocks []recipeBlock
	var cur *recipeBlock
	inGo := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case line == "```go":
			inGo, cur = true, nil
			continue
		case line == "```":
			if cur != nil {
				blocks = append(blocks, *cur)
			}
			inGo, cur = false, nil
			continue
		case !inGo:
			continue
		}
		if cur == nil {
			m := blockHeader.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("a Go block of the README starts with %q, not with // <upstream file>: <where>", line)
			}
			cur = &recipeBlock{file: m[1], where: m[2], groups: [][]string{nil}}
			continue
		}
		l := strings.TrimSpace(line)
		switch {
		case l == "":
		case strings.HasPrefix(l, "// ..."):
			cur.groups = append(cur.groups, nil)
		default:
			// The stand-in is upstream's controllers package itself.
			l = strings.ReplaceAll(l, "controllers.", "")
			cur.groups[len(cur.groups)-1] = append(cur.groups[len(cur.groups)-1], l)
		}
	}
	return blocks
}

// codeLines returns the file's lines, trimmed, without blank ones.
func codeLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// find returns the index after the first run of lines equal to group at or
// after from, or -1.
func find(lines, group []string, from int) int {
	for i := from; i+len(group) <= len(lines); i++ {
		if slices.Equal(lines[i:i+len(group)], group) {
			return i + len(group)
		}
	}
	return -1
}

// TestReadmeRecipe checks that every Go block of the README is in the
// stand-in's file of that name, line for line: the stand-in compiles with
// them and its tests run them, so a README whose lines no longer compile or
// no longer do what the tests show fails here.
func TestReadmeRecipe(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readRecipe(t, string(data))
	if len(blocks) < 6 {
		t.Fatalf("the README has %d Go blocks, want at least the six of the recipe", len(blocks))
	}
	for _, b := range blocks {
		name, ok := standIn[b.file]
		if !ok {
			t.Errorf("README block for %s (%s): the stand-in has no such file", b.file, b.where)
			continue
		}
		lines := codeLines(t, name)
		at := 0
		for _, g := range b.groups {
			if len(g) == 0 {
				continue
			}
			next := find(lines, g, at)
			if next < 0 {
				t.Errorf("README block for %s (%s): these lines are not, unbroken and in order, in the stand-in's %s:\n%s",
					b.file, b.where, name, strings.Join(g, "\n"))
				break
			}
			at = next
		}
	}
}

// TestReadmeVersions checks that the versions the README says a fork is
// raised to are the ones profilekit's go.mod requires.
func TestReadmeVersions(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:go\s+(\S+)|(\S+)\s+(v\S+)(?:\s*//.*)?)$`).FindAllStringSubmatch(string(gomod), -1) {
		if m[1] != "" {
			required["go"] = m[1]
		} else {
			required[m[2]] = m[3]
		}
	}
	rows := regexp.MustCompile("(?m)^\\| (`[^|]+) \\| (v?[0-9][^ |]*) \\|$").FindAllStringSubmatch(string(readme), -1)
	if len(rows) < 5 {
		t.Fatalf("the README's version table has %d rows, want the modules a fork is raised in", len(rows))
	}
	for _, row := range rows {
		for _, mod := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(row[1], -1) {
			name := mod[1]
			if strings.HasPrefix(name, "go") && !strings.Contains(name, ".") {
				name = "go"
			}
			want, ok := required[name]
			if !ok {
				t.Errorf("the README names %s, which profilekit's go.mod does not require", name)
				continue
			}
			if want != row[2] {
				t.Errorf("the README says %s %s, go.mod requires %s", name, row[2], want)
			}
		}
	}
}
