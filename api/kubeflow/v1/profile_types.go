package v1

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Plugin enables one per-Profile concern. Kind names the concern; Spec is its
// configuration, kept verbatim (unknown fields included) so that the plugin,
// not the API server, decides what is valid.
type Plugin struct {
	metav1.TypeMeta `json:",inline"`

	// Spec is the plugin's own configuration.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Spec *runtime.RawExtension `json:"spec,omitempty"`
}

// ProfileSpec is the desired state of a Profile.
type ProfileSpec struct {
	// Owner is the user or group that owns the Profile's namespace.
	// +optional
	Owner rbacv1.Subject `json:"owner,omitempty"`

	// Plugins lists the concerns enabled for this Profile, with their configuration.
	// +optional
	Plugins []Plugin `json:"plugins,omitempty"`

	// ResourceQuotaSpec is the quota the upstream controller writes as
	// kf-resource-quota. profilekit never writes that object.
	// +optional
	ResourceQuotaSpec corev1.ResourceQuotaSpec `json:"resourceQuotaSpec,omitempty"`
}

// ProfileCondition is one observation of a Profile. The upstream schema keeps
// no reason and no transition time, so a condition's reason, if any, leads its
// message.
type ProfileCondition struct {
	// Type of the condition, for example QuotasReady.
	// +optional
	Type string `json:"type,omitempty"`

	// Status of the condition: True, False or Unknown.
	// +optional
	Status string `json:"status,omitempty"`

	// Message says why the condition has its status.
	// +optional
	Message string `json:"message,omitempty"`

	// ObservedGeneration is the Profile's metadata.generation that the
	// condition was set from. The upstream schema does not keep it: on a
	// cluster that runs upstream's CRD it is dropped on write and reads as 0,
	// which means unknown.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ProfileStatus is the observed state of a Profile.
type ProfileStatus struct {
	// Conditions is replaced as a whole on every write.
	// +optional
	// +listType=atomic
	Conditions []ProfileCondition `json:"conditions,omitempty"`
}

// Profile is a tenant of a multi-tenant Kubeflow: a namespace with the Profile's
// name and everything that comes with it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:storageversion
type Profile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProfileSpec   `json:"spec,omitempty"`
	Status ProfileStatus `json:"status,omitempty"`
}

// ProfileList is a list of Profiles.
//
// +kubebuilder:object:root=true
type ProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Profile `json:"items"`
}
