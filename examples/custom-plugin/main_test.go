package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/custom-plugin/welcome"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// TestWelcomeLifecycle runs the command's own manager against a real API
// server and follows one Profile: the plugin enabled, a spec it refuses,
// a hand-deleted ConfigMap, and the plugin removed.
func TestWelcomeLifecycle(t *testing.T) {
	mgr, err := newManager(env.Config, options{
		Defaults:    []byte(`{"contact": "platform@example.org", "maxLength": 64}`),
		MetricsAddr: "0",
		ProbeAddr:   "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	testhost.Run(t, mgr)
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
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var p kubeflowv1.Profile
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return err
			}
			p.Spec.Plugins = nil
			return c.Update(ctx, &p)
		})
		if err != nil {
			t.Fatal(err)
		}
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
}

// waitConfigMap waits until the ConfigMap at key holds message, and
// returns it.
func waitConfigMap(t *testing.T, key client.ObjectKey, message string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		if err := env.Client.Get(context.Background(), key, &cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["message"] == message, "message = " + cm.Data["message"]
	})
	return &cm
}

// setSpec replaces the spec of the Profile's welcome entry.
func setSpec(t *testing.T, name, spec string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p kubeflowv1.Profile
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		p.Spec.Plugins[0].Spec = &runtime.RawExtension{Raw: []byte(spec)}
		return env.Client.Update(context.Background(), &p)
	})
	if err != nil {
		t.Fatal(err)
	}
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
