package replicate

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Annotations on every copy, naming where it came from. They hold names
// only, never a value.
const (
	// AnnotationSource is the id of the source in the host's config.
	AnnotationSource = "replicate.profilekit.dev/source"
	// AnnotationFrom is the namespace/name of the object copied.
	AnnotationFrom = "replicate.profilekit.dev/from"
)

// ReasonSourceNotFound leads the condition when a source the Profile gets
// does not exist (its copies, if any, are kept unless the policy is Delete).
const ReasonSourceNotFound = "SourceNotFound"

// Found is a source and the objects it picks now: *corev1.Secret or
// *corev1.ConfigMap, none when nothing exists.
type Found struct {
	Source  *Source
	Objects []client.Object
}

// Copy is one desired copy.
type Copy struct {
	// Kind is Secret or ConfigMap.
	Kind string
	// Name of the copy in the Profile's namespace.
	Name string
	// Source is the id of the source it comes from.
	Source string
	// From is the namespace/name of the object copied.
	From string
	// Object is the apply configuration of the copy.
	Object runtime.ApplyConfiguration
}

// Build returns the copies of the found objects in p's namespace, sorted by
// kind and name. Two objects whose copies would share a kind and name are a
// terminal InvalidConfig error naming both.
func Build(p *kubeflowv1.Profile, found []Found) ([]Copy, error) {
	ns := plugins.Namespace(p)
	var out []Copy
	byName := map[string]Copy{}
	for _, f := range found {
		s := f.Source
		for _, o := range f.Objects {
			from := o.GetNamespace() + "/" + o.GetName()
			name := s.copyName()
			if s.Selector != nil {
				name = s.CopyPrefix + o.GetName()
			}
			c := Copy{Kind: s.Kind, Name: name, Source: s.ID, From: from}
			ann := map[string]string{AnnotationSource: s.ID, AnnotationFrom: from}
			switch src := o.(type) {
			case *corev1.Secret:
				ac := corev1ac.Secret(name, ns).WithAnnotations(ann).WithData(pick(src.Data, s.Keys))
				if src.Type != "" {
					ac.WithType(src.Type)
				}
				c.Object = ac
			case *corev1.ConfigMap:
				c.Object = corev1ac.ConfigMap(name, ns).WithAnnotations(ann).
					WithData(pick(src.Data, s.Keys)).WithBinaryData(pick(src.BinaryData, s.Keys))
			default:
				return nil, fmt.Errorf("source %s: %T is neither a Secret nor a ConfigMap", s.ID, o)
			}
			key := c.Kind + "/" + c.Name
			if prev, ok := byName[key]; ok {
				return nil, plugins.Terminalf(plugins.ReasonInvalidConfig,
					"%s %q in namespace %s would be the copy of both %s (source %s) and %s (source %s)",
					c.Kind, c.Name, ns, prev.From, prev.Source, c.From, c.Source)
			}
			byName[key] = c
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Copy) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	return out, nil
}

// pick returns the entries of m that keys names, under their new keys, or
// all of m when keys is empty. Keys m lacks are left out.
func pick[V any](m map[string]V, keys []Key) map[string]V {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]V, len(m))
	if len(keys) == 0 {
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	for _, k := range keys {
		if v, ok := m[k.Key]; ok {
			out[k.as()] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
