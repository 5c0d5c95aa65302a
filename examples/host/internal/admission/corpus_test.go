package admission_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/profilekit/profilekit/internal/testenv"
)

// badProfile is a Profile some plugin should refuse, and where it comes from.
type badProfile struct {
	source string
	obj    *unstructured.Unstructured
}

// corpusProfiles turns the fuzz targets' saved inputs into the Profiles their
// targets build from them: the inputs that once broke or stretched a plugin.
// A target without a builder here is listed in unknown.
func corpusProfiles(t *testing.T) (out []badProfile, unknown []string) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "plugins", "*", "testdata", "fuzz", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		target := filepath.Base(dir)
		build, ok := corpusBuilders[target]
		if !ok {
			unknown = append(unknown, dir)
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			args, err := readCorpusEntry(f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			rel, _ := filepath.Rel(testenv.RepoRoot(), f)
			name := "corpus-" + strings.ToLower(strings.TrimPrefix(target, "Fuzz"))
			out = append(out, badProfile{source: rel, obj: build(name, args)})
		}
	}
	return out, unknown
}

// corpusBuilders build, for a fuzz target, the Profile its inputs stand for,
// as the target itself builds it.
var corpusBuilders = map[string]func(name string, args []string) *unstructured.Unstructured{
	// plugins/expose: a header name and a template value on two apps.
	"FuzzHeaderTemplate": func(name string, args []string) *unstructured.Unstructured {
		return profileWith(name, nil, "expose", map[string]any{"apps": []map[string]any{
			{"name": "app", "service": "svc", "port": 80, "requestHeaders": map[string]any{
				"set": map[string]string{args[0]: args[1]},
				"add": map[string]string{"X-Added": args[1]},
			}},
			{"name": "other", "service": "svc", "port": 8080, "rewriteToRoot": true},
		}})
	},
	// plugins/quotas: one override label, <resource>=<value>.
	"FuzzHard": func(name string, args []string) *unstructured.Unstructured {
		return profileWith(name, map[string]string{"quotas.profilekit.dev/" + args[0]: args[1]}, "", nil)
	},
	// plugins/network: a spec gate (raw JSON) and a label gate value.
	"FuzzGates": func(name string, args []string) *unstructured.Unstructured {
		var gate any
		if json.Unmarshal([]byte(args[0]), &gate) != nil {
			gate = args[0]
		}
		return profileWith(name, map[string]string{"network.example.org/open": args[1]}, "network", map[string]any{"gates": map[string]any{"open": gate}})
	},
}

// profileWith returns a Profile with labels and, when kind is set, one plugin
// entry of that kind with spec.
func profileWith(name string, labels map[string]string, kind string, spec any) *unstructured.Unstructured {
	p := map[string]any{
		"apiVersion": "kubeflow.org/v1",
		"kind":       "Profile",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"owner": map[string]any{"kind": "User", "name": "fuzz@example.org"}},
	}
	if len(labels) > 0 {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		p["metadata"].(map[string]any)["labels"] = l
	}
	if kind != "" {
		b, _ := json.Marshal(spec)
		var s any
		_ = json.Unmarshal(b, &s)
		p["spec"].(map[string]any)["plugins"] = []any{map[string]any{"kind": kind, "spec": s}}
	}
	return &unstructured.Unstructured{Object: p}
}

// readCorpusEntry reads a saved fuzz input ("go test fuzz v1", then one
// value per line); every value of the targets above is a string.
func readCorpusEntry(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	if !s.Scan() || s.Text() != "go test fuzz v1" {
		return nil, fmt.Errorf("not a fuzz corpus entry")
	}
	var args []string
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			continue
		}
		inner, ok := strings.CutPrefix(line, "string(")
		if !ok || !strings.HasSuffix(inner, ")") {
			return nil, fmt.Errorf("value %q is not a string", line)
		}
		v, err := strconv.Unquote(strings.TrimSuffix(inner, ")"))
		if err != nil {
			return nil, fmt.Errorf("value %q: %w", line, err)
		}
		args = append(args, v)
	}
	return args, s.Err()
}
