package templates

// This file holds what no template may make, whatever the host's templates
// say: kinds on the deny list, cluster-scoped kinds, bindings to the denied
// roles, objects that would pass for profilekit's own, and names that are
// not valid for their kind.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/profilekit/profilekit/plugins"
)

// rules are a config's deny lists.
type rules struct {
	kinds []schema.GroupKind
	roles []string
}

// ourDomain starts every label and annotation key profilekit writes or
// reads (plugins.LabelPlugin, plugins.LabelRole, plugins.AnnotationPaused,
// ...).
const ourDomain = "profilekit.dev/"

// recordPrefix starts the names of the ConfigMaps in which plugins keep
// their records (outside.RecordName, outside.StateName).
const recordPrefix = "profilekit-"

// isOurKey reports whether a label or annotation key is profilekit's: one
// a template setting it could make an object pass for another plugin's,
// or for a record.
func isOurKey(k string) bool {
	return strings.HasPrefix(k, ourDomain) || k == plugins.LabelManagedBy
}

// rbacGroup is the group of Roles and their bindings.
const rbacGroup = "rbac.authorization.k8s.io"

// clusterScoped are the well-known kinds that live outside any namespace.
// Config validation refuses them; for the others, the API server's
// discovery tells, for each Profile.
var clusterScoped = []schema.GroupKind{
	{Kind: "Namespace"}, {Kind: "Node"}, {Kind: "PersistentVolume"}, {Kind: "ComponentStatus"},
	{Group: rbacGroup, Kind: "ClusterRole"}, {Group: rbacGroup, Kind: "ClusterRoleBinding"},
	{Group: "storage.k8s.io", Kind: "StorageClass"}, {Group: "storage.k8s.io", Kind: "CSIDriver"},
	{Group: "storage.k8s.io", Kind: "CSINode"}, {Group: "storage.k8s.io", Kind: "VolumeAttachment"},
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
	{Group: "apiregistration.k8s.io", Kind: "APIService"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
	{Group: "node.k8s.io", Kind: "RuntimeClass"},
	{Group: "networking.k8s.io", Kind: "IngressClass"},
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"},
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"},
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"},
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"},
	{Group: "kubeflow.org", Kind: "Profile"},
}

// refuse returns why an object of kind gvk with fields obj may not be made.
// asWritten checks a template before any Profile fills its placeholders:
// a value that still holds one is left for later.
func (r rules) refuse(gvk schema.GroupVersionKind, obj map[string]any, asWritten bool) error {
	var errs []error
	gk := gvk.GroupKind()
	name, _ := Object(obj).metadata()["name"].(string)
	final := func(s string) bool { return !asWritten || !strings.Contains(s, "{{") }
	if slices.Contains(r.kinds, gk) {
		errs = append(errs, fmt.Errorf("kind %s is on the host's deny list (deniedKinds)", kindName(gk)))
	}
	if slices.Contains(clusterScoped, gk) {
		errs = append(errs, fmt.Errorf("kind %s is cluster-scoped: templates make objects in Profiles' namespaces only", kindName(gk)))
	}
	if gk.Group == rbacGroup && (gk.Kind == "RoleBinding" || gk.Kind == "ClusterRoleBinding") {
		ref, _ := obj["roleRef"].(map[string]any)
		role, _ := ref["name"].(string)
		if final(role) && slices.Contains(r.roles, role) {
			errs = append(errs, fmt.Errorf("%s grants role %q, which the host denies (deniedRoles)", gk.Kind, role))
		}
	}
	if gk == (schema.GroupKind{Kind: "ConfigMap"}) && strings.HasPrefix(name, recordPrefix) {
		errs = append(errs, fmt.Errorf("ConfigMap %q: names that start with %s are profilekit's records", name, recordPrefix))
	}
	if final(name) {
		if plugins.IsUpstreamName(name) {
			errs = append(errs, fmt.Errorf("name %q belongs to the upstream profile controller", name))
		}
		if msgs := nameProblems(gk, name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("name %q: %s", name, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

// nameProblems returns why name is not a valid name for kind gk: a path
// segment for RBAC's kinds (system:monitoring is a Role's name), a DNS
// subdomain for the others. The API server's own validation may be
// stricter still (a Service's name is a DNS label).
func nameProblems(gk schema.GroupKind, name string) []string {
	if gk.Group == rbacGroup {
		var msgs []string
		if name == "." || name == ".." {
			msgs = append(msgs, fmt.Sprintf("may not be %q", name))
		}
		for _, c := range []string{"/", "%"} {
			if strings.Contains(name, c) {
				msgs = append(msgs, fmt.Sprintf("may not contain %q", c))
			}
		}
		if name == "" || len(name) > validation.DNS1123SubdomainMaxLength {
			msgs = append(msgs, fmt.Sprintf("must be 1 to %d characters", validation.DNS1123SubdomainMaxLength))
		}
		return msgs
	}
	return validation.IsDNS1123Subdomain(name)
}

// kindName writes gk as deniedKinds takes it: Kind, or Kind.group.
func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}
