package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// A mutant is one change of one token of a package's source: the operator
// gremlins names, where it is, and what the token becomes.
type mutant struct {
	Operator string // gremlins' name, CONDITIONALS_NEGATION for one
	File     string // relative to the package's folder
	Line     int    // 1-based
	Column   int    // 1-based, in bytes, as gremlins and go/token count
	From, To string
}

// ID names the mutant as the record does: package/file:line:column and the
// change.
func (m mutant) ID(pkg string) string {
	return fmt.Sprintf("%s/%s:%d:%d %s->%s", pkg, m.File, m.Line, m.Column, m.From, m.To)
}

// replacements says what each token becomes under each of gremlins' default
// operators (v0.6.0): the one change gremlins makes at that position.
var replacements = map[string]map[string]string{
	"ARITHMETIC_BASE":       {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
	"CONDITIONALS_BOUNDARY": {"<": "<=", "<=": "<", ">": ">=", ">=": ">"},
	"CONDITIONALS_NEGATION": {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"},
	"INCREMENT_DECREMENT":   {"++": "--", "--": "++"},
	"INVERT_NEGATIVES":      {"-": "+"},
}

// dryRunLine matches a mutant of gremlins' dry run ("RUNNABLE
// CONDITIONALS_NEGATION at plugin.go:40:11"), those it would run and those
// it calls not covered (among them a tagless switch's cases, which its
// coverage never sees).
var dryRunLine = regexp.MustCompile(`\b(?:RUNNABLE|NOT COVERED) ([A-Z_]+) at ([^\s:]+):(\d+):(\d+)`)

// readMutants reads gremlins' dry run and, for each mutant of a file that
// only matches, reads the token at its position in dir to know the change.
func readMutants(r io.Reader, dir string, only *regexp.Regexp) ([]mutant, error) {
	var mutants []mutant
	sources := map[string][]string{}
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		match := dryRunLine.FindStringSubmatch(scanner.Text())
		if match == nil || (only != nil && !only.MatchString(match[2])) {
			continue
		}
		m := mutant{Operator: match[1], File: match[2]}
		m.Line, _ = strconv.Atoi(match[3])
		m.Column, _ = strconv.Atoi(match[4])
		lines, ok := sources[m.File]
		if !ok {
			data, err := os.ReadFile(filepath.Join(dir, m.File))
			if err != nil {
				return nil, err
			}
			lines = strings.Split(string(data), "\n")
			sources[m.File] = lines
		}
		if err := m.readToken(lines); err != nil {
			return nil, err
		}
		mutants = append(mutants, m)
	}
	return mutants, scanner.Err()
}

// readToken sets From and To from the token at the mutant's position, the
// longer of two operators that share a first byte ("<=" before "<").
func (m *mutant) readToken(lines []string) error {
	table, ok := replacements[m.Operator]
	if !ok {
		return fmt.Errorf("%s:%d:%d: operator %s is not one of gremlins' defaults", m.File, m.Line, m.Column, m.Operator)
	}
	if m.Line < 1 || m.Line > len(lines) || m.Column < 1 || m.Column > len(lines[m.Line-1]) {
		return fmt.Errorf("%s:%d:%d: no such position", m.File, m.Line, m.Column)
	}
	rest := lines[m.Line-1][m.Column-1:]
	for _, n := range []int{2, 1} {
		if len(rest) >= n {
			if to, ok := table[rest[:n]]; ok {
				m.From, m.To = rest[:n], to
				return nil
			}
		}
	}
	return fmt.Errorf("%s:%d:%d: %s finds no operator at %q", m.File, m.Line, m.Column, m.Operator, rest[:min(len(rest), 8)])
}

// apply returns src with the mutant's change made, or an error when the
// token at its position is no longer From (the source moved on).
func (m mutant) apply(src []byte) ([]byte, error) {
	lines := strings.Split(string(src), "\n")
	if m.Line > len(lines) {
		return nil, fmt.Errorf("%s has no line %d", m.File, m.Line)
	}
	line := lines[m.Line-1]
	at := m.Column - 1
	if at < 0 || !strings.HasPrefix(line[min(at, len(line)):], m.From) {
		return nil, fmt.Errorf("%s:%d:%d is not %q", m.File, m.Line, m.Column, m.From)
	}
	lines[m.Line-1] = line[:at] + m.To + line[at+len(m.From):]
	return []byte(strings.Join(lines, "\n")), nil
}
