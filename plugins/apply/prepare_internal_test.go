package apply

import (
	"testing"

	istionetworkingv1 "istio.io/api/networking/v1"
	istioac "istio.io/client-go/pkg/applyconfiguration/networking/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	netv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// profileObjects is a Profile's share of objects like the ones the
// plugins send: typed apply configurations of client-go's kinds and
// Istio's encoded ones, 12 in all.
func profileObjects(ns string) []runtime.ApplyConfiguration {
	out := []runtime.ApplyConfiguration{
		corev1ac.ResourceQuota("default", ns).WithSpec(corev1ac.ResourceQuotaSpec().WithHard(corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse("4"), corev1.ResourceLimitsMemory: resource.MustParse("32Gi"), "count/pods": resource.MustParse("50"),
		})),
		corev1ac.ServiceAccount("team-editor", ns),
		corev1ac.ServiceAccount("team-viewer", ns),
	}
	for _, role := range []string{"admin", "edit", "view"} {
		out = append(out, rbacv1ac.RoleBinding("team-"+role, ns).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName("kubeflow-"+role)).
			WithSubjects(rbacv1ac.Subject().WithKind("User").WithAPIGroup("rbac.authorization.k8s.io").WithName("user@example.com")))
	}
	for _, name := range []string{"deny-by-default", "allow-same-namespace", "allow-istio"} {
		out = append(out, netv1ac.NetworkPolicy(name, ns).WithSpec(netv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector()).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(netv1ac.NetworkPolicyIngressRule().WithFrom(netv1ac.NetworkPolicyPeer().
				WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"kubernetes.io/metadata.name": ns}))))))
	}
	for _, name := range []string{"notebooks", "pipelines", "tensorboards"} {
		out = append(out, Encoded(istioac.VirtualService(name, ns).WithSpec(istionetworkingv1.VirtualService{
			Hosts:    []string{"*"},
			Gateways: []string{"kubeflow/kubeflow-gateway"},
			Http: []*istionetworkingv1.HTTPRoute{{
				Match: []*istionetworkingv1.HTTPMatchRequest{{Uri: &istionetworkingv1.StringMatch{MatchType: &istionetworkingv1.StringMatch_Prefix{Prefix: "/" + name + "/" + ns + "/"}}}},
				Route: []*istionetworkingv1.HTTPRouteDestination{{Destination: &istionetworkingv1.Destination{Host: name + "." + ns + ".svc.cluster.local", Port: &istionetworkingv1.PortSelector{Number: 80}}}},
			}},
		})))
	}
	return out
}

// benchApplier is an Applier for the objects of profileObjects.
func benchApplier(desired []runtime.ApplyConfiguration) *Applier {
	p := &kubeflowv1.Profile{}
	p.Name, p.UID = "team-a", "0b6f8e0c-3a1d-4d8e-9a55-2b1f0c7d9e11"
	seen := map[schema.GroupVersionKind]bool{}
	var owns []schema.GroupVersionKind
	for _, d := range desired {
		u, _ := toUnstructured(d)
		if gvk := u.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			owns = append(owns, gvk)
		}
	}
	return &Applier{kind: "bench", profile: p, owns: owns}
}

// BenchmarkPrepare is what a pass spends turning a Profile's desired
// objects into the ones it compares and sends; allocations per object are
// its B/op over the objects.
func BenchmarkPrepare(b *testing.B) {
	desired := profileObjects("team-a")
	a := benchApplier(desired)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.prepare(desired); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(desired)), "objects")
}
