package reconcilers_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// networkDefaults are istio.yaml's six NetworkPolicies, one of them gated.
const networkDefaults = `{"policies": [
 {"name": "default-deny", "podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
 {"name": "allow-same-namespace", "podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [{"from": [{"podSelector": {}}]}], "egress": [{"to": [{"podSelector": {}}]}]},
 {"name": "allow-dns", "podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]},
 {"name": "allow-istiod", "podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "istio-system"}}, "podSelector": {"matchLabels": {"app": "istiod"}}}], "ports": [{"protocol": "TCP", "port": 15012}]}]},
 {"name": "allow-ingress-gateway", "podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "istio-system"}}, "podSelector": {"matchLabels": {"app": "istio-ingressgateway"}}}]}]},
 {"name": "allow-monitoring", "gate": {"label": "profilekit.dev/allow-monitoring"}, "podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]}]}
]}`

// BenchmarkConfirmingPass is one pass of a plugin over a Profile whose
// objects are in sync, as a resync or an event that changed nothing makes
// it: what the host allocates to find there is nothing to do, per object
// the pass reconciles (B/object; -benchmem gives the pass's own).
func BenchmarkConfirmingPass(b *testing.B) {
	for _, c := range []struct {
		name     string
		def      plugins.Definition
		defaults string
		objects  int
	}{
		{"network", network.Definition(), networkDefaults, 6},
		{"quotas", quotas.Definition(), `{"hard": {"requests.cpu": "4", "limits.cpu": "8", "requests.memory": "16Gi", "limits.memory": "32Gi"}}`, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			run := rand.String(5)
			sel := labels.SelectorFromSet(labels.Set{"bench": run})
			mgr, err := ctrl.NewManager(env.Config, manager.Options{
				Scheme: env.Scheme, Cache: reconcilers.CacheOptions(nil), Client: reconcilers.ClientOptions(),
				MapperProvider: reconcilers.NewRESTMapper, Metrics: metricsserver.Options{BindAddress: "0"},
				Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			})
			if err != nil {
				b.Fatal(err)
			}
			r, err := reconcilers.New(mgr, c.def, reconcilers.WithDefaults([]byte(c.defaults)),
				reconcilers.WithEnabledForAll(sel), reconcilers.WithShard(sel), reconcilers.WithResync(time.Hour))
			if err != nil {
				b.Fatal(err)
			}
			if err := r.SetupWithManager(mgr); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			defer func() { cancel(); <-done }()

			name := "bench-" + run
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			// Shaped as the benchmark's Profiles are (examples/host/internal/bench).
			p := &kubeflowv1.Profile{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
					"bench": run, "profilekit.dev/allow-monitoring": "true", "egress.profilekit.dev/enabled": "true",
				}},
				Spec: kubeflowv1.ProfileSpec{
					Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner@example.org"},
					Plugins: []kubeflowv1.Plugin{
						entry("limitrange", ""),
						entry("expose", `{"apps":[{"name":"rstudio","service":"rstudio","port":8787}]}`),
						entry("egress", `{"hosts":[{"host":"data00001.blob.core.windows.net"}]}`),
					},
				},
			}
			for _, o := range []client.Object{ns, p} {
				if err := env.Client.Create(ctx, o); err != nil {
					b.Fatal(err)
				}
				defer func() { _ = env.Client.Delete(b.Context(), o) }()
			}
			cond := c.def.Condition()
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				var got kubeflowv1.Profile
				if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
					return false, nil
				}
				found := plugins.FindCondition(got.Status.Conditions, cond)
				return found != nil && found.Status == plugins.ConditionTrue, nil
			})
			if err != nil {
				b.Fatalf("%s never True in the host's cache: %v", cond, err)
			}
			// And with the conditions of istio.yaml's other plugins.
			var got kubeflowv1.Profile
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
				b.Fatal(err)
			}
			for _, k := range []string{"core", "authpolicy", "contributors", "egress", "expose", "limitrange", "namespacemeta", "notebook", "rbac", "replicate", "volumes", "quotas", "network"} {
				if t := plugins.ConditionTypeFor(k); t != cond {
					got.Status.Conditions = append(got.Status.Conditions, kubeflowv1.ProfileCondition{
						Type: t, Status: plugins.ConditionTrue, Message: "Applied: 2 objects in sync", ObservedGeneration: got.Generation,
					})
				}
			}
			if err := env.Client.Status().Update(ctx, &got); err != nil {
				b.Fatal(err)
			}
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				var seen kubeflowv1.Profile
				err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(p), &seen)
				return err == nil && seen.ResourceVersion == got.ResourceVersion, nil
			})
			if err != nil {
				b.Fatal(err)
			}
			req := reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
			// A first pass here fills what the host keeps between passes.
			if _, err := r.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := r.Reconcile(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N*c.objects), "B/object")
		})
	}
}
