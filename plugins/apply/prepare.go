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
	a.markOwned(labels)
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

// markOwned sets in labels those that mark the plugin's objects for the
// Profile (plugins.OwnershipLabels), and the Profile's shard labels
// (WithShardLabels) in place of any the plugin set under their keys.
func (a *Applier) markOwned(labels map[string]any) {
	labels[plugins.LabelManagedBy] = plugins.ManagedByValue
	labels[plugins.LabelPlugin] = a.kind
	labels[plugins.LabelProfile] = a.profile.Name
	for _, k := range a.shardKeys {
		key := ShardKey(k)
		delete(labels, key)
		if v, ok := a.profile.Labels[k]; ok {
			labels[key] = v
		}
	}
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
