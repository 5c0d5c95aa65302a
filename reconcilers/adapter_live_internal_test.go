package reconcilers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// A fork's adapter set up with the fork's manager hands each pass the
// manager's reader without a cache, as the standalone reconciler does: a
// pass finds through LiveReader what the fork's (cached) client does not
// show yet. An adapter on its own has none, and LiveReader is its client.
func TestForkPassesReadThroughTheManagersLiveReader(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "theirs"}}
	cached := fake.NewClientBuilder().WithScheme(scheme).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(theirs).Build()
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	key := client.ObjectKeyFromObject(theirs)

	a := NewAdapter[client.Client, *kubeflowv1.Profile](plugins.Definition{Plugin: plugins.Funcs{KindName: "reader"}})
	req, _ := a.request(cached, p, nil)
	if err := req.LiveReader().Get(t.Context(), key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("an adapter on its own read %v through LiveReader, want NotFound from its client", err)
	}

	a.env = &forkEnv{scheme: scheme, live: live, records: outside.NewRecords()}
	req, _ = a.request(cached, p, nil)
	if req.Live == nil {
		t.Fatal("a fork's pass has no Live reader")
	}
	if err := req.LiveReader().Get(t.Context(), key, &corev1.ConfigMap{}); err != nil {
		t.Errorf("a fork's pass read %v through LiveReader, want the ConfigMap the API server holds", err)
	}
	if err := req.Client.Get(t.Context(), key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the fork's client read %v, want NotFound: the test shows nothing otherwise", err)
	}
}
