package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
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

// own adds the ownership labels, the owner reference and the hash annotation.
func (a *Applier) own(u *unstructured.Unstructured) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, plugins.OwnershipLabels(a.kind, a.profile.Name))
	u.SetLabels(l)

	refs, _, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences")
	_ = unstructured.SetNestedSlice(u.Object, append(refs, ownerReferenceFields(a.profile)), "metadata", "ownerReferences")

	ann := u.GetAnnotations()
	delete(ann, plugins.AnnotationAppliedHash)
	if len(ann) == 0 {
		u.SetAnnotations(nil)
	}
	sum := sha256.Sum256(a.templateOf(mustJSON(u.Object)))
	if ann == nil {
		ann = map[string]string{}
	}
	ann[plugins.AnnotationAppliedHash] = hex.EncodeToString(sum[:8])
	u.SetAnnotations(ann)
}

// templateOf returns data, an object's JSON, with the Profile's UID and name
// replaced by bytes JSON never holds (control characters are escaped in its
// strings). Objects rendered alike for many Profiles then hash alike, and
// the cache holds their hash annotation once; for one Profile, two objects
// hash alike only when their JSON is the same, since the replacement can be
// undone.
func (a *Applier) templateOf(data []byte) []byte {
	if uid := a.profile.UID; uid != "" {
		data = bytes.ReplaceAll(data, []byte(uid), []byte{1})
	}
	if name := a.profile.Name; name != "" {
		data = bytes.ReplaceAll(data, []byte(name), []byte{0})
	}
	return data
}

func mustJSON(v any) []byte {
	// The object was decoded from JSON a moment ago, so it encodes again.
	b, _ := json.Marshal(v)
	return b
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
