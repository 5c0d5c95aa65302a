package hostapp

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/internal/testenv"
)

// progressConfig is a host configuration with one plugin for every
// Profile, so that diff has work on each.
const progressConfig = `leaderElection:
  namespace: profilekit-system
plugins:
  quotas:
    enabled: all
    defaults:
      hard: {requests.cpu: "1"}
`

// runAs runs args with the terminal check answering terminal, and returns
// the exit code, stdout and stderr.
func runAs(t *testing.T, terminal bool, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := newCommand(App{Definitions: builtin.Definitions()}, &stdout, &stderr,
		&globals{terminal: func(io.Writer) bool { return terminal }})
	cmd.SetArgs(args)
	code := 0
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		code, _ = exitStatus(err)
	}
	return code, stdout.String(), stderr.String()
}

// checkProgress checks what a command printed with and without a terminal:
// on a terminal, the progress line on stderr reached every Profile and was
// cleared at the end; off it, stderr has nothing of it; stdout is the same
// either way, with no progress in it.
func checkProgress(t *testing.T, want string, args ...string) {
	t.Helper()
	code, ttyOut, ttyErr := runAs(t, true, args...)
	plainCode, plainOut, plainErr := runAs(t, false, args...)
	if !strings.Contains(ttyErr, want) {
		t.Errorf("%s on a terminal: stderr lacks %q:\n%q", args[0], want, ttyErr)
	}
	if !strings.HasSuffix(ttyErr, "\r\x1b[K") {
		t.Errorf("%s on a terminal: the progress line is not cleared at the end:\n%q", args[0], ttyErr)
	}
	if plainErr != "" {
		t.Errorf("%s off a terminal: stderr %q, want nothing", args[0], plainErr)
	}
	if code != plainCode || ttyOut != plainOut || strings.ContainsAny(ttyOut, "\r\x1b") {
		t.Errorf("%s: on a terminal exit %d, stdout:\n%q\noff one exit %d, stdout:\n%q\nwant the same, without progress", args[0], code, ttyOut, plainCode, plainOut)
	}
}

// profileNamed returns a Profile of alice's.
func profileNamed(name string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeflowv1.GroupVersion.String(), Kind: "Profile"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice@example.org"}},
	}
}

// TestValidateProgress: validate over a folder of files shows its progress
// on a terminal only.
func TestValidateProgress(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(config, []byte(progressConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	profiles := filepath.Join(dir, "profiles")
	if err := os.Mkdir(profiles, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		doc := fmt.Sprintf("apiVersion: kubeflow.org/v1\nkind: Profile\nmetadata: {name: p%02d}\nspec:\n  owner: {kind: User, name: alice@example.org}\n", i)
		if err := os.WriteFile(filepath.Join(profiles, fmt.Sprintf("p%02d.yaml", i)), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	checkProgress(t, "validate: 25/25 Profiles (100%)", "validate", "--config", config, "-f", profiles)
	if _, out, _ := runAs(t, true, "validate", "--config", config, "-f", profiles); strings.Count(out, ": admitted\n") != 25 {
		t.Errorf("validate did not admit the 25 Profiles:\n%s", out)
	}
}

// TestDiffAndReleaseProgress: diff --all and release over a cluster's
// Profiles show their progress on a terminal only.
func TestDiffAndReleaseProgress(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
	})
	for i := range 12 {
		if err := env.Client.Create(t.Context(), profileNamed(fmt.Sprintf("progress-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(config, []byte(progressConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.KubeconfigFile(t)
	checkProgress(t, "diff: 12/12 Profiles (100%)", "diff", "--config", config, "--all", "--kubeconfig", kubeconfig)
	checkProgress(t, "release: 12/12 Profiles (100%)", "release", "--config", config, "--kubeconfig", kubeconfig, "--dry-run")
}
