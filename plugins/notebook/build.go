package notebook

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// GroupVersionKind is the PodDefault's kind, served by the Kubeflow
// admission webhook's CRD.
var GroupVersionKind = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1alpha1", Kind: "PodDefault"}

// PodDefaultSpec is the spec of a PodDefault, with the field names of the
// published kubeflow.org/v1alpha1 API. profilekit does not import that API;
// these are the fields it writes.
type PodDefaultSpec struct {
	// Selector picks the pods the PodDefault applies to. Required.
	Selector metav1.LabelSelector `json:"selector"`
	// Desc is the text the notebook UI shows for the option.
	Desc string `json:"desc,omitempty"`
	// ServiceAccountName is set on the pods.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// AutomountServiceAccountToken is set on the pods.
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// Env is added to every container.
	Env []corev1.EnvVar `json:"env,omitempty"`
	// EnvFrom is added to every container.
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// Volumes are added to the pods.
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// VolumeMounts are added to every container.
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// Annotations are added to the pods.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels are added to the pods.
	Labels map[string]string `json:"labels,omitempty"`
	// Tolerations are added to the pods.
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// PodDefaultApplyConfiguration is a PodDefault as server-side apply takes
// it: only the fields set are sent, so only they are owned.
type PodDefaultApplyConfiguration struct {
	metav1ac.TypeMetaApplyConfiguration    `json:",inline"`
	*metav1ac.ObjectMetaApplyConfiguration `json:"metadata,omitempty"`
	Spec                                   *PodDefaultSpec `json:"spec,omitempty"`
}

var _ runtime.ApplyConfiguration = &PodDefaultApplyConfiguration{}

// IsApplyConfiguration marks PodDefaultApplyConfiguration as the root of an
// apply configuration.
func (PodDefaultApplyConfiguration) IsApplyConfiguration() {}

// BuildPodDefault returns the PodDefault d in namespace ns.
func BuildPodDefault(d PodDefault, ns string) *PodDefaultApplyConfiguration {
	spec := d.PodDefaultSpec
	pd := &PodDefaultApplyConfiguration{
		ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName(d.Name).WithNamespace(ns),
		Spec:                         &spec,
	}
	pd.WithAPIVersion(GroupVersionKind.GroupVersion().String()).WithKind(GroupVersionKind.Kind)
	return pd
}

// Build returns the PodDefaults for p, sorted by name: the configured ones
// whose profileSelector matches p's labels.
func Build(cfg *Config, p *kubeflowv1.Profile) ([]*PodDefaultApplyConfiguration, error) {
	var out []*PodDefaultApplyConfiguration
	for _, d := range cfg.PodDefaults {
		if d.ProfileSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(d.ProfileSelector)
			if err != nil {
				return nil, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("podDefault %s: profileSelector: %w", d.Name, err))
			}
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
		}
		out = append(out, BuildPodDefault(d, plugins.Namespace(p)))
	}
	slices.SortFunc(out, func(a, b *PodDefaultApplyConfiguration) int { return cmp.Compare(*a.Name, *b.Name) })
	return out, nil
}
