package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/custom-plugin/welcome"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

var env *testenv.Env

// asBinary makes the test binary behave as the custom-plugin binary, its
// arguments those after the program's name, so that the tests run main
// itself without building it.
const asBinary = "CUSTOM_PLUGIN_TEST_AS_BINARY"

func TestMain(m *testing.M) {
	if os.Getenv(asBinary) == "1" {
		os.Args[0] = "custom-plugin"
		main()
		os.Exit(0)
	}
	testenv.Main(m, &env, testenv.Options{})
}

// command returns the binary run with args.
func command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asBinary+"=1")
	return cmd
}

// TestRenderWelcomeAndQuotas renders one Profile with the binary and the
// host configuration file that enables the team's plugin beside a
// built-in one.
func TestRenderWelcomeAndQuotas(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cmd := command(t, "render", "--config", "host.yaml", "-f", "testdata/profile.yaml")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("render: %v\n%s", err, stderr.String())
	}
	var cm *corev1.ConfigMap
	var quota *corev1.ResourceQuota
	for _, doc := range strings.Split(stdout.String(), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("render printed a document that is not YAML: %v\n%s", err, doc)
		}
		switch meta.Kind {
		case "ConfigMap":
			cm = &corev1.ConfigMap{}
			if err := yaml.Unmarshal([]byte(doc), cm); err != nil {
				t.Fatal(err)
			}
		case "ResourceQuota":
			quota = &corev1.ResourceQuota{}
			if err := yaml.Unmarshal([]byte(doc), quota); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cm == nil || cm.Name != welcome.DefaultName || cm.Namespace != "team-a" {
		t.Fatalf("no ConfigMap team-a/%s in the output:\n%s", welcome.DefaultName, stdout.String())
	}
	if got, want := cm.Data["message"], "Hello alice@example.org, this is team-a."; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if got := cm.Data["contact"]; got != "platform@example.org" {
		t.Errorf("contact = %q, want host.yaml's platform@example.org", got)
	}
	if quota == nil || quota.Name != quotas.DefaultName {
		t.Fatalf("no ResourceQuota %s in the output:\n%s", quotas.DefaultName, stdout.String())
	}
	if got := quota.Spec.Hard["limits.cpu"]; got.String() != "8" {
		t.Errorf("limits.cpu = %s, want host.yaml's 8", got.String())
	}
}

// TestConfigurationErrors shows that the binary checks the team's plugin
// section as it checks a built-in one: exit 1 and the field named.
func TestConfigurationErrors(t *testing.T) {
	for name, tc := range map[string]struct{ config, want string }{
		"a kind this binary is not built with": {
			config: "plugins:\n  welcom:\n    enabled: all\n",
			want:   "welcom",
		},
		"defaults the plugin refuses": {
			config: "plugins:\n  welcome:\n    enabled: all\n    defaults:\n      maxLenght: 64\n",
			want:   "maxLenght",
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "host.yaml")
			if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := command(t, "render", "--config", path, "-f", "testdata/profile.yaml")
			cmd.Stderr = &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Fatalf("exit code %d (%v), want 1; stderr:\n%s", code, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) || !strings.HasPrefix(stderr.String(), "custom-plugin: ") {
				t.Errorf("stderr = %q, want the binary's name and %q", stderr.String(), tc.want)
			}
		})
	}
}

// TestRunWelcomeLifecycle runs the binary's run command against a real API
// server with host.yaml and follows one Profile: both plugins applied, a
// hand-deleted ConfigMap, a spec the plugin refuses, and the plugin
// removed; then the process stops on SIGTERM.
func TestRunWelcomeLifecycle(t *testing.T) {
	var logs bytes.Buffer
	cmd := command(t, "run", "--config", "host.yaml", "--kubeconfig", env.KubeconfigFile(t),
		"--leader-elect=false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run ended with %v on SIGTERM, want exit 0; output:\n%s", err, logs.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("run did not stop within 30s of SIGTERM")
		}
	}
	t.Cleanup(stop)
	ctx := t.Context()

	const name = "welcome-team"
	c := env.Client
	p := testhost.NewProfile(t, c, name, nil, kubeflowv1.Plugin{
		TypeMeta: metav1.TypeMeta{Kind: welcome.Kind},
		Spec:     &runtime.RawExtension{Raw: []byte(`{"message": "Hello {{ .Owner }}, this is {{ .Namespace }}."}`)},
	})
	key := client.ObjectKey{Namespace: name, Name: welcome.DefaultName}
	wantMessage := "Hello owner@example.org, this is welcome-team."

	t.Run("enabled", func(t *testing.T) {
		testhost.WaitCondition(t, c, name, "WelcomeReady", plugins.ConditionTrue, "Applied")
		testhost.WaitCondition(t, c, name, "QuotasReady", plugins.ConditionTrue, "Applied")
		cm := waitConfigMap(t, key, wantMessage)
		if !plugins.IsOwnedBy(cm.Labels, welcome.Kind, name) {
			t.Errorf("labels = %v, want profilekit's ownership labels for plugin %s and profile %s", cm.Labels, welcome.Kind, name)
		}
		if refs := cm.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Profile" || refs[0].UID != p.UID {
			t.Errorf("owner references = %+v, want the Profile %s", refs, p.UID)
		}
		if got := cm.Data["contact"]; got != "platform@example.org" {
			t.Errorf("contact = %q, want the host default platform@example.org", got)
		}
		if !managedBy(cm, plugins.FieldManagerFor(welcome.Kind)) {
			t.Errorf("managed fields %v have no apply by %s", cm.ManagedFields, plugins.FieldManagerFor(welcome.Kind))
		}
		var quota corev1.ResourceQuota
		if err := c.Get(ctx, client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, &quota); err != nil {
			t.Fatalf("the built-in quotas plugin wrote no ResourceQuota: %v", err)
		}
		if got := quota.Spec.Hard["limits.cpu"]; got.String() != "8" {
			t.Errorf("limits.cpu = %s, want host.yaml's 8", got.String())
		}
	})

	t.Run("a deleted ConfigMap is put back", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: welcome.DefaultName}}
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		waitConfigMap(t, key, wantMessage)
	})

	t.Run("a bad spec is a False condition and deletes nothing", func(t *testing.T) {
		setSpec(t, name, `{"message": "Hello {{ .User }}"}`)
		cond := testhost.WaitCondition(t, c, name, "WelcomeReady", plugins.ConditionFalse, "InvalidSpec")
		if !strings.Contains(cond.Message, `spec.plugins[0] (welcome).spec: message "Hello {{ .User }}": unknown placeholder {{ .User }}`) {
			t.Errorf("message = %q, want the field and the unknown placeholder", cond.Message)
		}
		setSpec(t, name, `{"message": "`+strings.Repeat("x", 65)+`"}`)
		cond = testhost.WaitCondition(t, c, name, "WelcomeReady", plugins.ConditionFalse, "above maxLength 64")
		if !strings.Contains(cond.Message, "message is 65 bytes") {
			t.Errorf("message = %q, want the message's length", cond.Message)
		}
		// The ConfigMap keeps what the last good spec made.
		waitConfigMap(t, key, wantMessage)
	})

	t.Run("removing the plugin revokes it", func(t *testing.T) {
		testhost.UpdateProfile(t, c, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			err := c.Get(ctx, key, &corev1.ConfigMap{})
			if !apierrors.IsNotFound(err) {
				return false, "ConfigMap still there: " + errString(err)
			}
			var p kubeflowv1.Profile
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			if cond := plugins.FindCondition(p.Status.Conditions, "WelcomeReady"); cond != nil {
				return false, "condition still there: " + cond.Message
			}
			return true, ""
		})
	})

	stop()
}

// waitConfigMap waits until the ConfigMap at key holds message, and
// returns it.
func waitConfigMap(t *testing.T, key client.ObjectKey, message string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		if err := env.Client.Get(t.Context(), key, &cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["message"] == message, "message = " + cm.Data["message"]
	})
	return &cm
}

// setSpec replaces the spec of the Profile's welcome entry.
func setSpec(t *testing.T, name, spec string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Spec.Plugins[0].Spec = &runtime.RawExtension{Raw: []byte(spec)}
	})
}

func managedBy(obj client.Object, manager string) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager && m.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
