package reconcilers_test

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// ProfileReconciler has the shape of the upstream profile controller's
// reconciler: it embeds client.Client beside a Scheme field, which hides the
// client's Scheme method, so it is no client.Client; it is a
// reconcilers.Cluster. (Upstream's has more fields, which do not matter.)
type ProfileReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// Plugin is upstream's plugin interface. A fork has its own Profile type;
// this one uses profilekit's, which has the same JSON.
type Plugin interface {
	ApplyPlugin(*ProfileReconciler, *kubeflowv1.Profile) error
	RevokePlugin(*ProfileReconciler, *kubeflowv1.Profile) error
}

// The compiler checks that the adapter, instantiated with the fork's types,
// is an upstream Plugin.
var _ Plugin = (*reconcilers.Adapter[*ProfileReconciler, *kubeflowv1.Profile])(nil)

// A profilekit plugin used as one of the upstream controller's plugins, the
// way a fork of it does (see examples/kubeflow-fork): the fork's switch on
// kind makes an Adapter, decodes the entry's spec into it with
// json.Unmarshal, and calls ApplyPlugin, and RevokePlugin when the Profile
// goes. Upstream keeps the Profile's status and finalizer; the adapter
// returns errors for it to report.
func ExampleNewAdapter() {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Println(err)
		return
	}
	c, err := client.New(restConfig(), client.Options{Scheme: scheme})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := &ProfileReconciler{Client: c, Scheme: scheme}
	ctx := context.Background() //nolint:forbidigo // no *testing.T in reach

	const name = "example-fork"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Delete(ctx, ns) }()
	profile := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "5b1e2d8c-0000-4000-8000-000000000001"}}

	// In the fork's GetPluginSpec, case quotas.Kind:
	var plugin Plugin = reconcilers.NewAdapter[*ProfileReconciler, *kubeflowv1.Profile](quotas.Definition(),
		reconcilers.AdapterDefaults([]byte(`{"hard": {"limits.cpu": "16"}}`)))
	// Upstream decodes the entry's spec into the plugin.
	if err := json.Unmarshal([]byte(`{"hard": {"limits.cpu": "8"}}`), plugin); err != nil {
		fmt.Println(err)
		return
	}
	if err := plugin.ApplyPlugin(r, profile); err != nil {
		fmt.Println(err)
		return
	}
	var rq corev1.ResourceQuota
	key := client.ObjectKey{Namespace: name, Name: quotas.DefaultName}
	if err := c.Get(ctx, key, &rq); err != nil {
		fmt.Println(err)
		return
	}
	cpu := rq.Spec.Hard["limits.cpu"]
	fmt.Printf("applied: %s/%s limits.cpu=%s, field manager %s\n", rq.Namespace, rq.Name, cpu.String(), rq.ManagedFields[0].Manager)

	// A spec the plugin refuses is an error naming the field; nothing changes.
	bad := reconcilers.NewAdapter[*ProfileReconciler, *kubeflowv1.Profile](quotas.Definition())
	if err := json.Unmarshal([]byte(`{"hrad": {"limits.cpu": "8"}}`), bad); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("refused:", bad.ApplyPlugin(r, profile))

	if err := plugin.RevokePlugin(r, profile); err != nil {
		fmt.Println(err)
		return
	}
	err = c.Get(ctx, key, &rq)
	fmt.Println("revoked, quota not found:", apierrors.IsNotFound(err))
	// Output:
	// applied: example-fork/profilekit-quota limits.cpu=8, field manager profilekit-quotas
	// refused: spec.plugins[0] (quotas).spec: unknown field "hrad"
	// revoked, quota not found: true
}
