package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/hostapp"
	"github.com/profilekit/profilekit/examples/host/internal/local"
	"github.com/profilekit/profilekit/internal/testenv"
)

// asBinary makes the test binary behave as the profilekit binary, so that
// exit codes are tested through main itself.
const asBinary = "PROFILEKIT_TEST_AS_BINARY"

var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv(asBinary) == "1" {
		os.Args = append([]string{"profilekit"}, strings.Fields(os.Getenv(asBinary+"_ARGS"))...)
		main()
		return
	}
	// The tests that run side by side (own control plane, or own shard
	// and lease) wait on their hosts far more than they compute.
	testenv.Parallel(6)
	// The hosts run under the chart's RBAC (rbac_chart_test.go); the
	// admission plugin makes the API server check the owner references
	// they write as some clusters do.
	testenv.Main(testenv.RunnerFunc(func() int { return checkRBACUse(m.Run()) }), &env,
		testenv.Options{AdmissionPlugins: []string{"OwnerReferencesPermissionEnforcement"}})
}

// execMain runs the binary's main in a child process with args and returns
// its exit code, stdout and stderr.
func execMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(os.Environ(), asBinary+"=1", asBinary+"_ARGS="+strings.Join(args, " "))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return 0, stdout.String(), stderr.String()
}

// lockedBuffer is written by the manager's goroutines, some of which still
// log while Main returns.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runMain runs the command line in-process.
func runMain(ctx context.Context, args ...string) (int, string, string) {
	var stdout, stderr lockedBuffer
	code := hostapp.Main(ctx, app(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runMain(t.Context(), "version")
	if code != 0 || !strings.HasPrefix(out, "profilekit ") || !strings.Contains(out, "plugins: [") {
		t.Errorf("version: exit %d, output:\n%s", code, out)
	}
	for _, d := range builtin.Definitions() {
		if !strings.Contains(out, d.Kind()) {
			t.Errorf("version does not list plugin %s:\n%s", d.Kind(), out)
		}
	}
}

func TestVersionLinked(t *testing.T) {
	// make image and the Dockerfile link both into main.version and
	// main.revision.
	a := app()
	a.Version, a.Revision = "v9.8.7", "0123abcd"
	var stdout, stderr bytes.Buffer
	if code := hostapp.Main(t.Context(), a, []string{"version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"profilekit v9.8.7\n", "revision: 0123abcd\n"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("version does not print %q:\n%s", want, stdout.String())
		}
	}
}

// TestShippedBinaryHasNoBenchmark checks that the benchmark, a tool for
// people working on profilekit, is neither a command of the binary the
// image ships nor linked into it.
func TestShippedBinaryHasNoBenchmark(t *testing.T) {
	code, _, stderr := runMain(t.Context(), "bench")
	if code != 1 || !strings.Contains(stderr, `unknown command "bench"`) {
		t.Errorf("profilekit bench: exit %d, stderr %q; want exit 1 and an unknown command", code, stderr)
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "/examples/host/internal/bench\n") {
		t.Errorf("the profilekit binary links the benchmark package:\n%s", out)
	}
	if !strings.Contains(string(out), "/examples/host/hostapp\n") {
		t.Errorf("go list -deps does not list hostapp, so this check reads the wrong package:\n%s", out)
	}
}

func TestHelpExplainsFlags(t *testing.T) {
	code, out, _ := runMain(t.Context(), "run", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, flag := range []string{"--config", "--kubeconfig", "--metrics-bind-address", "--health-probe-bind-address", "--leader-elect", "--kube-api-qps", "--kube-api-burst", "--log-level", "--log-format"} {
		if !strings.Contains(out, flag) {
			t.Errorf("run --help does not explain %s", flag)
		}
	}
}

func TestDemoAssetsVersion(t *testing.T) {
	// The demo and the tests must look for the same control plane binaries.
	if got := local.AssetsVersion; got != testenv.AssetsVersion {
		t.Errorf("demo looks in bin/k8s/%s, the tests in bin/k8s/%s", got, testenv.AssetsVersion)
	}
}
