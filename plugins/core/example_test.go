package core_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/core"
)

// The objects the core plugin makes for a Profile, the namespace first, with
// upstream's names, so that Kubeflow's dashboard, access management,
// notebooks and pipelines find them. The namespace gets the mesh label and
// the labels file's entries; the Applier adds the ownership labels and owner
// references when it writes them.
func ExampleBuild() {
	cfg, err := core.Definition().DecodeHostDefaults([]byte(`{"userIdHeader": "kubeflow-userid", "mesh": "sidecar"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	labelsFile, err := core.ParseLabels([]byte("katib.kubeflow.org/metrics-collector-injection: enabled\n"), "namespace-labels.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: kubeflowv1.ProfileSpec{
			Owner:             rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice@example.org"},
			ResourceQuotaSpec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}},
		},
	}
	objs, err := core.Build(cfg.(*core.Config), p, core.DefaultLabels(cfg.(*core.Config), labelsFile))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, obj := range objs {
		// Every builder returns an apply configuration, which encodes to
		// the object's JSON.
		data, err := json.Marshal(obj)
		if err != nil {
			fmt.Println(err)
			return
		}
		var o struct {
			Kind     string
			Metadata metav1.ObjectMeta
		}
		if err := json.Unmarshal(data, &o); err != nil {
			fmt.Println(err)
			return
		}
		name := o.Metadata.Name
		if o.Metadata.Namespace != "" {
			name = o.Metadata.Namespace + "/" + name
		}
		fmt.Println(o.Kind, name)
		for _, k := range slices.Sorted(maps.Keys(o.Metadata.Labels)) {
			fmt.Printf("  label %s=%s\n", k, o.Metadata.Labels[k])
		}
		for _, k := range slices.Sorted(maps.Keys(o.Metadata.Annotations)) {
			fmt.Printf("  annotation %s=%s\n", k, o.Metadata.Annotations[k])
		}
	}
	// Output:
	// Namespace team-a
	//   label istio-injection=enabled
	//   label katib.kubeflow.org/metrics-collector-injection=enabled
	//   annotation owner=alice@example.org
	// RoleBinding team-a/namespaceAdmin
	//   annotation role=admin
	//   annotation user=alice@example.org
	// ServiceAccount team-a/default-editor
	// RoleBinding team-a/default-editor
	// ServiceAccount team-a/default-viewer
	// RoleBinding team-a/default-viewer
	// AuthorizationPolicy team-a/ns-owner-access-istio
	//   annotation role=admin
	//   annotation user=alice@example.org
	// ResourceQuota team-a/kf-resource-quota
}
