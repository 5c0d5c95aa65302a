package opa

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/profilekit/profilekit/internal/testenv"
)

var (
	env *testenv.Env
	srv *testenv.OPA
)

// TestMain starts a real OPA server with the example policy and data, and a
// control plane for the ConfigMap source. Fuzz workers start neither.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if slices.ContainsFunc(os.Args[1:], func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		return m.Run()
	}
	example := filepath.Join(testenv.RepoRoot(), "examples", "opa")
	s, err := testenv.StartOPA(filepath.Join(example, "grants.rego"), filepath.Join(example, "data.json"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	srv = s
	defer func() { _ = srv.Stop() }()
	e, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	env = e
	defer func() { _ = env.Stop() }()
	return m.Run()
}
