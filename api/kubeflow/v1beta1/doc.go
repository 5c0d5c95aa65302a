// Package v1beta1 holds the Profile API of the kubeflow.org group at version v1beta1,
// served beside the stored v1 with the same schema.
//
// The types are wire-compatible with the upstream Kubeflow profile controller's
// profiles.kubeflow.org CRD: the same JSON field names, cluster scope, and a
// status with conditions that keep only type, status and message. A Profile
// names a tenant; its namespace has the Profile's name.
//
// # Stability
//
// Stable under semver: the Go types and their JSON, which are upstream's
// wire format. A field upstream adds is added here in a minor release; none
// is removed or renamed while upstream serves it.
//
// +kubebuilder:object:generate=true
// +groupName=kubeflow.org
package v1beta1
