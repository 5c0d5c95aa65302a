package main

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/profilekit/profilekit/internal/testenv"
)

const metricsDoc = monitoringDir + "/README.md"

// metricDoc is a row of the metrics table: a metric's type and labels.
type metricDoc struct {
	Type   string
	Labels []string
}

// metricsTable returns the rows of the metrics table of
// examples/deploy/monitoring/README.md by metric name.
func metricsTable(t *testing.T) map[string]metricDoc {
	t.Helper()
	rows := map[string]metricDoc{}
	in := false
	for line := range strings.Lines(string(readFile(t, metricsDoc))) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "| metric | type | labels |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("%s: a row of the metrics table without 4 cells: %s", metricsDoc, line)
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		doc := metricDoc{Type: strings.TrimSpace(cells[1]), Labels: []string{}}
		for l := range strings.SplitSeq(cells[2], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				doc.Labels = append(doc.Labels, l)
			}
		}
		slices.Sort(doc.Labels)
		if _, dup := rows[name]; dup {
			t.Errorf("%s: %s is in the metrics table twice", metricsDoc, name)
		}
		rows[name] = doc
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no metrics table", metricsDoc)
	}
	return rows
}

// definedMetrics returns the metrics the module's code defines with
// prometheus.New<Type>[Vec](Opts{Name: ...}, labels), by name.
func definedMetrics(t *testing.T) map[string]metricDoc {
	t.Helper()
	types := map[string]string{"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram", "Summary": "summary"}
	defined := map[string]metricDoc{}
	root := testenv.RepoRoot()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "bin" || rel == "hack" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := goparser.ParseFile(token.NewFileSet(), path, nil, goparser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !isIdent(sel.X, "prometheus") || !strings.HasPrefix(sel.Sel.Name, "New") {
				return true
			}
			kind, vec := strings.CutSuffix(strings.TrimPrefix(sel.Sel.Name, "New"), "Vec")
			typ, ok := types[kind]
			if !ok || len(call.Args) == 0 {
				return true
			}
			doc := metricDoc{Type: typ, Labels: []string{}}
			name := ""
			if opts, ok := call.Args[0].(*ast.CompositeLit); ok {
				for _, e := range opts.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch key := kv.Key.(*ast.Ident).Name; key {
					case "Name":
						name = stringLit(t, rel, kv.Value)
					case "Namespace", "Subsystem":
						t.Errorf("%s: a metric with a %s: write its whole name in Name", rel, key)
					}
				}
			}
			if vec && len(call.Args) > 1 {
				if ls, ok := call.Args[1].(*ast.CompositeLit); ok {
					for _, e := range ls.Elts {
						doc.Labels = append(doc.Labels, stringLit(t, rel, e))
					}
				}
			}
			if name == "" {
				t.Errorf("%s: prometheus.%s without a literal Name", rel, sel.Sel.Name)
				return true
			}
			slices.Sort(doc.Labels)
			defined[name] = doc
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(defined) < 10 {
		t.Fatalf("only %d metrics found in the code: %v", len(defined), slices.Sorted(maps.Keys(defined)))
	}
	return defined
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func stringLit(t *testing.T, file string, e ast.Expr) string {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		t.Errorf("%s: a metric name or label that is not a string literal", file)
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Errorf("%s: %v", file, err)
	}
	return s
}

// documentedName returns the row of the table that documents the series
// name: the metric, or the histogram or summary it is a series of.
func documentedName(name string, table map[string]metricDoc) (string, bool) {
	if _, ok := table[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if doc, ok := table[base]; ok && (doc.Type == "histogram" || doc.Type == "summary" && suffix != "_bucket") {
				return base, true
			}
		}
	}
	return "", false
}

// TestMetricsTable checks that the metrics table documents every metric the
// code defines, with its type and labels, and every metric the dashboard and
// the alert rules read.
func TestMetricsTable(t *testing.T) {
	table := metricsTable(t)
	defined := definedMetrics(t)
	for _, name := range slices.Sorted(maps.Keys(defined)) {
		want := defined[name]
		got, ok := table[name]
		if !ok {
			t.Errorf("%s: the metrics table lacks %s (%s %v)", metricsDoc, name, want.Type, want.Labels)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: %s (-code +table):\n%s", metricsDoc, name, diff)
		}
	}
	used := monitoringMetrics(t)
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if _, ok := documentedName(name, table); !ok {
			t.Errorf("%s: the metrics table lacks %s, which %s reads", metricsDoc, name, strings.Join(used[name], "; "))
		}
	}
}

// checkMetricsTable checks the table against what a running host exports:
// each documented metric it exports has the table's type and labels.
func checkMetricsTable(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	table := metricsTable(t)
	for _, name := range slices.Sorted(maps.Keys(table)) {
		want := table[name]
		fam, ok := fams[name]
		if !ok {
			continue
		}
		got := metricDoc{Type: strings.ToLower(fam.GetType().String()), Labels: []string{}}
		seen := map[string]bool{}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				seen[l.GetName()] = true
			}
		}
		got.Labels = append(got.Labels, slices.Sorted(maps.Keys(seen))...)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: %s as the host exports it (-table +host):\n%s", metricsDoc, name, diff)
		}
	}
}
