package reconcilers_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/profilekit/profilekit/api/kubeflow"
	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// restConfig reaches the API server the examples run against: the package's
// test control plane. A program would use ctrl.GetConfigOrDie().
func restConfig() *rest.Config { return env.Config }

// The standalone host in a controller-runtime manager of your own: a cache
// that holds Profiles and only the objects profilekit labels, a
// StatusWriter shared by the plugins, and one Reconciler per plugin. This
// one runs the quotas plugin for every Profile with the host's defaults,
// then shows what it wrote and reported for a new Profile.
func ExampleNew() {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Println(err)
		return
	}
	if err := kubeflow.AddToScheme(scheme); err != nil {
		fmt.Println(err)
		return
	}
	cfg := restConfig()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Cache:   reconcilers.CacheOptions(nil), // nil: no shard, every Profile
		Client:  reconcilers.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Only because this example shares its process with tests that run
		// the same plugin in other managers; a program has one manager.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	status, err := reconcilers.NewStatusWriter(mgr, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := reconcilers.New(mgr, quotas.Definition(),
		reconcilers.WithDefaults([]byte(`{"hard": {"limits.cpu": "16", "requests.cpu": "4"}}`)),
		reconcilers.WithEnabledForAll(nil),
		reconcilers.WithStatusWriter(status),
	)
	if err != nil {
		fmt.Println(err) // a host default that does not validate stops here
		return
	}
	if err := r.SetupWithManager(mgr); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // no *testing.T in reach
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	// A Profile and its namespace, which the core plugin or the upstream
	// controller makes in a cluster.
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Println(err)
		return
	}
	const name = "example-standalone"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}},
	}
	for _, obj := range []client.Object{ns, p} {
		if err := c.Create(ctx, obj); err != nil {
			fmt.Println(err)
			return
		}
		defer func() { _ = c.Delete(context.Background(), obj) }() //nolint:forbidigo // no *testing.T in reach
	}

	var cond *kubeflowv1.ProfileCondition
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		cond = plugins.FindCondition(p.Status.Conditions, "QuotasReady")
		return cond != nil, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cond.Type, cond.Status, cond.Message)

	var rq corev1.ResourceQuota
	if err := c.Get(ctx, client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, &rq); err != nil {
		fmt.Println(err)
		return
	}
	cpu := rq.Spec.Hard["limits.cpu"]
	fmt.Printf("ResourceQuota %s/%s limits.cpu=%s, managed by %s for %s\n", rq.Namespace, rq.Name, cpu.String(),
		rq.Labels[plugins.LabelPlugin], rq.Labels[plugins.LabelProfile])
	// Output:
	// QuotasReady True Applied: 1 object in sync
	// ResourceQuota example-standalone/profilekit-quota limits.cpu=16, managed by quotas for example-standalone
}
