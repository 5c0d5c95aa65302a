package page_test

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/notebook"
)

// figures makes, in ns, the objects the plugins would: a quota with its
// use set as the quota controller would, a LimitRange, an annotated
// ServiceAccount, a volume and a PodDefault described by desc.
func figures(t *testing.T, ns, desc string) {
	t.Helper()
	ctx := t.Context()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "kf-resource-quota", Namespace: ns, Labels: labels("quotas", ns)},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}}}
	must(t, env.Client.Create(ctx, q))
	// envtest runs no quota controller: set what it would.
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1500m"), corev1.ResourcePods: resource.MustParse("3")}}
	must(t, env.Client.Status().Update(ctx, q))
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns, Labels: labels("limitrange", ns)},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}}}
	must(t, env.Client.Create(ctx, lr))
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default-editor", Namespace: ns, Labels: labels("core", ns),
		Annotations: map[string]string{irsa.AnnotationRoleARN: "arn:aws:iam::123456789012:role/" + ns}}}
	// Made by the irsa plugin's field manager, which then holds the
	// annotation, as when the plugin annotates core's ServiceAccount.
	must(t, env.Client.Create(ctx, sa, client.FieldOwner(plugins.FieldManagerFor(irsa.Kind))))
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "workspace", Namespace: ns, Labels: labels("volumes", ns)},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}}
	must(t, env.Client.Create(ctx, pvc))
	pd := &unstructured.Unstructured{}
	pd.SetGroupVersionKind(notebook.GroupVersionKind)
	pd.SetName("add-gpu")
	pd.SetNamespace(ns)
	pd.SetLabels(labels("notebook", ns))
	must(t, unstructured.SetNestedField(pd.Object, desc, "spec", "desc"))
	must(t, unstructured.SetNestedField(pd.Object, map[string]any{"matchLabels": map[string]any{"add-gpu": "true"}}, "spec", "selector"))
	must(t, env.Client.Create(ctx, pd))
}

// kfam gives subject (a User or a Group) role in ns as the dashboard's
// Manage Contributors does: KFAM's RoleBinding, of KFAM's name and
// annotations, to viewRole, without profilekit's labels.
func kfam(t *testing.T, ns, subjectKind, subject, role string) {
	t.Helper()
	kfamNamed(t, ns, contributors.BindingName(subjectKind, subject, role), subjectKind, subject, role)
}

// kfamNamed is kfam with the binding's name given.
func kfamNamed(t *testing.T, ns, name, subjectKind, subject, role string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{"user": subject, "role": role}},
		Subjects:   []rbacv1.Subject{{Kind: subjectKind, Name: subject, APIGroup: rbacv1.GroupName}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: viewRole},
	}
	must(t, env.Client.Create(t.Context(), rb))
}

// share makes the ResourceQuota the budgets plugin's balancer keeps in ns
// for budget, with hard as its share and used as the quota controller's
// count.
func share(t *testing.T, ns, budget string, hard, used corev1.ResourceList, labels ...map[string]string) *corev1.ResourceQuota {
	t.Helper()
	l := plugins.OwnershipLabels(budgets.Kind, ns)
	l[budgets.LabelBudget] = budget
	for _, more := range labels {
		maps.Copy(l, more)
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: budgets.QuotaName(budget), Namespace: ns, Labels: l},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	must(t, env.Client.Create(t.Context(), q))
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	must(t, env.Client.Status().Update(t.Context(), q))
	return q
}
