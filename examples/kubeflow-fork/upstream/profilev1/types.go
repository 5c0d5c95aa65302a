// Package profilev1 stands in for the upstream profile controller's own
// api/v1 package: a fork has its own Profile type, not profilekit's, and the
// adapter must work with it. Only what the fork's plugin code touches is here.
package profilev1

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is kubeflow.org/v1.
var GroupVersion = schema.GroupVersion{Group: "kubeflow.org", Version: "v1"}

// AddToScheme registers Profile and ProfileList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Profile{}, &ProfileList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Plugin is upstream's plugin entry.
type Plugin struct {
	metav1.TypeMeta `json:",inline"`
	Spec            *runtime.RawExtension `json:"spec,omitempty"`
}

// ProfileSpec is upstream's spec, less the quota.
type ProfileSpec struct {
	Owner   rbacv1.Subject `json:"owner,omitempty"`
	Plugins []Plugin       `json:"plugins,omitempty"`
}

// ProfileCondition is upstream's condition.
type ProfileCondition struct {
	Type    string `json:"type,omitempty"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// ProfileStatus is upstream's status.
type ProfileStatus struct {
	Conditions []ProfileCondition `json:"conditions,omitempty"`
}

// Profile is upstream's Profile.
type Profile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ProfileSpec   `json:"spec,omitempty"`
	Status            ProfileStatus `json:"status,omitempty"`
}

// ProfileList is a list of Profiles.
type ProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Profile `json:"items"`
}

// DeepCopyObject copies the Profile through JSON; the stand-in needs no speed.
func (p *Profile) DeepCopyObject() runtime.Object { return roundTrip(p, &Profile{}) }

// DeepCopyObject copies the list through JSON.
func (l *ProfileList) DeepCopyObject() runtime.Object { return roundTrip(l, &ProfileList{}) }
