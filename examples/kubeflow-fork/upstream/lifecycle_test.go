package upstream_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// TestForkRevokesRemovedPlugin: a plugin taken out of spec.plugins is
// revoked: its objects and its condition go.
func TestForkRevokesRemovedPlugin(t *testing.T) {
	const name = "fork-removed"
	startFork(t)
	createProfile(t, name, entry(quotas.Kind, quotaSpec), entry(limitrange.Kind, limitSpec))
	eventually(t, 20*time.Second, func() error { return present(t.Context(), &corev1.LimitRange{}, limitKey(name)) })
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = p.Spec.Plugins[:1] })
	if err := poll(10*time.Second, func() error { return gone(t.Context(), &corev1.LimitRange{}, limitKey(name)) }); err != nil {
		t.Errorf("removed plugin not revoked: %v", err)
	}
	if err := poll(5*time.Second, func() error {
		c, err := condition(t.Context(), name, limitrange.Definition().Condition())
		if err == nil && c != nil {
			return fmt.Errorf("condition still there: %+v", *c)
		}
		return err
	}); err != nil {
		t.Errorf("removed plugin's condition: %v", err)
	}
	if err := present(t.Context(), &corev1.ResourceQuota{}, quotaKey(name)); err != nil {
		t.Errorf("the plugin still listed lost its object: %v", err)
	}
}

// TestForkDeletesBrokenProfile: a Profile whose spec broke after it was
// set up is still deleted, with its namespace.
func TestForkDeletesBrokenProfile(t *testing.T) {
	const name = "fork-broken"
	startFork(t)
	createProfile(t, name, entry(quotas.Kind, quotaSpec), entry(limitrange.Kind, limitSpec))
	eventually(t, 20*time.Second, func() error {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(&p, upstream.Finalizer) {
			return fmt.Errorf("finalizers %v", p.Finalizers)
		}
		return nil
	})
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins[0] = entry(quotas.Kind, `{"hrad":{}}`) })
	if err := env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	if err := poll(30*time.Second, func() error { return gone(t.Context(), &kubeflowv1.Profile{}, client.ObjectKey{Name: name}) }); err != nil {
		t.Errorf("broken Profile not deleted: %v", err)
	}
	if err := poll(60*time.Second, func() error { return gone(t.Context(), &corev1.Namespace{}, client.ObjectKey{Name: name}) }); err != nil {
		t.Errorf("namespace of the deleted Profile: %v", err)
	}
}
