package apply

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// prepare turns apply configurations into unstructured objects that carry our
// labels, owner reference and hash, sorted so that a pass reports them, and
// sends its cluster-scoped ones, in a stable order.
func (a *Applier) prepare(desired []runtime.ApplyConfiguration) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(desired))
	seen := make(map[objectKey]bool, len(desired))
	for _, d := range desired {
		u, err := toUnstructured(d)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", a.kind, err)
		}
		k := keyOf(u)
		switch {
		case k.name == "" || k.gvk.Kind == "":
			return nil, fmt.Errorf("plugin %s: desired object has no kind or name: %s", a.kind, k.gvk)
		case !slices.Contains(a.owns, k.gvk):
			return nil, fmt.Errorf("plugin %s: %s is not among the kinds the plugin owns", a.kind, k.gvk)
		case a.isProfileNamespace(k):
			if !a.upstream {
				return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "plugin %s: the namespace %s is the core plugin's, no other plugin writes it", a.kind, k.name)
			}
		case !a.anyNamespace && k.namespace != plugins.Namespace(a.profile):
			return nil, fmt.Errorf("plugin %s: %s %s/%s is outside the Profile's namespace %s; a plugin that writes elsewhere keeps outside state", a.kind, k.gvk.Kind, k.namespace, k.name, plugins.Namespace(a.profile))
		case plugins.IsUpstreamName(k.name) && !a.upstream:
			return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "plugin %s: %s %q is the upstream controller's, profilekit never writes it", a.kind, k.gvk.Kind, k.name)
		case seen[k]:
			return nil, fmt.Errorf("plugin %s: %s %s/%s is desired twice", a.kind, k.gvk.Kind, k.namespace, k.name)
		}
		seen[k] = true
		a.own(u)
		objs = append(objs, u)
	}
	slices.SortFunc(objs, func(x, y *unstructured.Unstructured) int { return compareKeys(keyOf(x), keyOf(y)) })
	return objs, nil
}

// isProfileNamespace reports whether k is the Profile's namespace itself.
func (a *Applier) isProfileNamespace(k objectKey) bool {
	return k.gvk == namespaceGVK && k.namespace == "" && k.name == plugins.Namespace(a.profile)
}

// own adds the ownership labels, the owner reference and the hash
// annotation, in place: u was decoded for this pass and no one else holds
// it.
func (a *Applier) own(u *unstructured.Unstructured) {
	md, _ := u.Object["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		u.Object["metadata"] = md
	}
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	for _, k := range a.shardKeys {
		delete(labels, ShardKey(k))
	}
	for k, v := range a.ownership() {
		labels[k] = v
	}
	refs, _ := md["ownerReferences"].([]any)
	md["ownerReferences"] = append(refs, ownerReferenceFields(a.profile))

	ann, _ := md["annotations"].(map[string]any)
	delete(ann, plugins.AnnotationAppliedHash)
	if len(ann) == 0 {
		delete(md, "annotations")
	}
	hash := a.appliedHash(u.Object)
	if ann == nil {
		ann = map[string]any{}
	}
	ann[plugins.AnnotationAppliedHash] = hash
	md["annotations"] = ann
}

// ownership returns the labels that mark the plugin's objects for the
// Profile, with the Profile's shard labels (WithShardLabels), made once per
// Applier.
func (a *Applier) ownership() map[string]string {
	if a.ownLabels == nil {
		a.ownLabels = plugins.OwnershipLabels(a.kind, a.profile.Name)
		for _, k := range a.shardKeys {
			if v, ok := a.profile.Labels[k]; ok {
				a.ownLabels[ShardKey(k)] = v
			}
		}
	}
	return a.ownLabels
}

// ownerReferenceFields is plugins.OwnerReference(p) as the fields of an
// unstructured object.
func ownerReferenceFields(p *kubeflowv1.Profile) map[string]any {
	return map[string]any{
		"apiVersion":         kubeflowv1.GroupVersion.String(),
		"kind":               "Profile",
		"name":               p.Name,
		"uid":                string(p.UID),
		"controller":         true,
		"blockOwnerDeletion": true,
	}
}
