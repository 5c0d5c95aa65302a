package quotas_test

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// The quota a Profile gets: the host's defaults, the Profile's spec over
// them, and an override label over both (gpu is an alias of
// requests.nvidia.com/gpu).
func ExampleBuild() {
	hostDefaults := []byte(`{
		"labelPrefix": "quotas.example.org",
		"caps": {"limits.cpu": "64", "requests.nvidia.com/gpu": "4"},
		"hard": {"requests.cpu": "8", "limits.cpu": "16", "limits.memory": "32Gi"}
	}`)
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "team-a",
			Labels: map[string]string{"quotas.example.org/gpu": "1"},
		},
		Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
			TypeMeta: metav1.TypeMeta{Kind: quotas.Kind},
			Spec:     &runtime.RawExtension{Raw: []byte(`{"hard": {"limits.cpu": "32"}}`)},
		}}},
	}
	cfg, err := quotas.Definition().Decode(hostDefaults, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	rq, err := quotas.Build(cfg.(*quotas.Config), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("ResourceQuota %s/%s\n", *rq.Namespace, *rq.Name)
	hard := rq.Spec.Hard
	for _, name := range slices.Sorted(maps.Keys(*hard)) {
		q := (*hard)[name]
		fmt.Printf("  %s: %s\n", name, q.String())
	}
	// Output:
	// ResourceQuota team-a/profilekit-quota
	//   limits.cpu: 32
	//   limits.memory: 32Gi
	//   requests.cpu: 8
	//   requests.nvidia.com/gpu: 1
}

// A label the plugin cannot use is a terminal error naming the label and
// its value; the host reports it on the Profile and leaves the quota as it
// was.
func ExampleBuild_invalidLabel() {
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{
		Name:   "team-a",
		Labels: map[string]string{"quotas.profilekit.dev/limits.cpu": "lots"},
	}}
	cfg := quotas.NewConfig()
	cfg.Hard = corev1.ResourceList{}
	_, err := quotas.Build(cfg, p)
	fmt.Println(plugins.FailureMessage(err, plugins.ReasonApplyFailed))
	// Output:
	// InvalidLabel: label quotas.profilekit.dev/limits.cpu="lots": not a quantity
}
