package main

// This file reads a request to the API server as its authorizer does: the
// attributes of the request itself, and the rights checked inside a write.

import (
	"net/http"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// attributes are what the API server authorizes a resource request by.
type attributes struct{ verb, group, resource, namespace, name string }

func (a attributes) String() string {
	s := a.verb + " " + a.resource
	if a.group != "" {
		s += "." + a.group
	}
	if a.name != "" {
		s += " " + a.name
	}
	if a.namespace != "" {
		return s + " in namespace " + a.namespace
	}
	return s + " cluster-wide"
}

// attributesOf returns the attributes of a request to the API server, as
// its request info has them; false for a request that is not for a
// resource (discovery, /version).
func attributesOf(r *http.Request) (attributes, bool) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var a attributes
	switch {
	case len(parts) > 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) > 3 && parts[0] == "apis":
		a.group, parts = parts[1], parts[3:]
	default:
		return a, false
	}
	switch {
	case parts[0] == "namespaces" && (len(parts) == 2 || len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize")):
		// A namespace itself is in its own namespace, so that a Role
		// there may grant reading it.
		a.resource, a.name, a.namespace = "namespaces", parts[1], parts[1]
		if len(parts) == 3 {
			a.resource += "/" + parts[2]
		}
	default:
		if parts[0] == "namespaces" && len(parts) > 2 {
			a.namespace, parts = parts[1], parts[2:]
		}
		a.resource = parts[0]
		if len(parts) > 1 {
			a.name = parts[1]
		}
		if len(parts) > 2 {
			a.resource += "/" + parts[2]
		}
	}
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case a.name != "":
			a.verb = "get"
		case q.Get("watch") == "true" || q.Get("watch") == "1":
			a.verb = "watch"
		default:
			a.verb = "list"
		}
		if a.name == "" {
			// A list or watch of one name is authorized for that name.
			if n, ok := strings.CutPrefix(q.Get("fieldSelector"), "metadata.name="); ok && !strings.Contains(n, ",") {
				a.name = n
			}
		}
	case http.MethodPost:
		a.verb = "create"
	case http.MethodPut:
		a.verb = "update"
	case http.MethodPatch:
		a.verb = "patch"
	case http.MethodDelete:
		a.verb = "delete"
		if a.name == "" {
			a.verb = "deletecollection"
		}
	default:
		return a, false
	}
	return a, true
}

// checkedInside returns the rights the API server checks inside the write
// a with body: bind on the role a RoleBinding refers to, escalate on a
// Role, update on the finalizers of an owner whose deletion an owner
// reference blocks.
func checkedInside(a attributes, body []byte) []attributes {
	if a.verb != "create" && a.verb != "update" && a.verb != "patch" || len(body) == 0 {
		return nil
	}
	var obj struct {
		Metadata struct {
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		} `json:"metadata"`
		RoleRef *rbacv1.RoleRef `json:"roleRef"`
	}
	if err := yaml.Unmarshal(body, &obj); err != nil {
		return nil
	}
	var out []attributes
	rbacGroup := a.group == rbacv1.GroupName
	switch {
	case rbacGroup && a.resource == "rolebindings" && obj.RoleRef != nil && obj.RoleRef.Kind == "ClusterRole":
		out = append(out, attributes{verb: "bind", group: rbacv1.GroupName, resource: "clusterroles", name: obj.RoleRef.Name, namespace: a.namespace})
	case rbacGroup && a.resource == "rolebindings" && obj.RoleRef != nil:
		out = append(out, attributes{verb: "bind", group: rbacv1.GroupName, resource: "roles", name: obj.RoleRef.Name, namespace: a.namespace})
	case rbacGroup && a.resource == "roles":
		out = append(out, attributes{verb: "escalate", group: rbacv1.GroupName, resource: "roles", name: a.name, namespace: a.namespace})
	}
	for _, ref := range obj.Metadata.OwnerReferences {
		if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			continue
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(ref.Kind))
		// Profiles, the only owner profilekit refers to, are cluster-scoped.
		out = append(out, attributes{verb: "update", group: gv.Group, resource: plural.Resource + "/finalizers", name: ref.Name})
	}
	return out
}
