package plugintest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
)

// TestCachedHoldsWhatAHostCaches: the harness's cached view finds Profiles
// and the objects profilekit labels, as a host's cache does, and nothing a
// tenant or another controller made.
func TestCachedHoldsWhatAHostCaches(t *testing.T) {
	scheme, err := testenv.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}
	view := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ours", Labels: ours}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "the-tenants"}},
	).Build()
	c := cached{view: view, scheme: scheme}

	for _, tt := range []struct {
		obj   client.Object
		key   client.ObjectKey
		found bool
	}{
		{&kubeflowv1.Profile{}, client.ObjectKey{Name: "team-a"}, true},
		{&corev1.Namespace{}, client.ObjectKey{Name: "team-a"}, false},
		{&corev1.ConfigMap{}, client.ObjectKey{Namespace: "team-a", Name: "ours"}, true},
		{&corev1.ConfigMap{}, client.ObjectKey{Namespace: "team-a", Name: "the-tenants"}, false},
	} {
		err := c.Get(t.Context(), tt.key, tt.obj)
		if tt.found && err != nil || !tt.found && !apierrors.IsNotFound(err) {
			t.Errorf("Get %T %s: %v, want found %t", tt.obj, tt.key, err, tt.found)
		}
	}
	var cms corev1.ConfigMapList
	if err := c.List(t.Context(), &cms, client.InNamespace("team-a")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range cms.Items {
		names = append(names, cm.Name)
	}
	if diff := cmp.Diff([]string{"ours"}, names); diff != "" {
		t.Errorf("listed ConfigMaps (-want +got):\n%s", diff)
	}
	var profiles kubeflowv1.ProfileList
	if err := c.List(t.Context(), &profiles); err != nil || len(profiles.Items) != 1 {
		t.Errorf("listed Profiles: %d, %v; want the one", len(profiles.Items), err)
	}
}
