package bench

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/plugins"
)

// profileName is the name of the i-th Profile (and its namespace) with the
// given prefix.
func profileName(prefix string, i int) string { return fmt.Sprintf("%s-%05d", prefix, i) }

// Profile returns the i-th benchmark Profile, named with prefix. It is
// shaped so that every plugin of the Istio configuration serves it: it lists
// the plugins enabled as listed (limitrange, expose, egress) and carries the
// labels that open the gated ones (the monitoring NetworkPolicy, the egress gateway).
func Profile(prefix string, i int) *kubeflowv1.Profile {
	name := profileName(prefix, i)
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	return &kubeflowv1.Profile{
		TypeMeta: metav1.TypeMeta{APIVersion: kubeflowv1.GroupVersion.String(), Kind: "Profile"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"profilekit.dev/allow-monitoring": "true",
				"egress.profilekit.dev/enabled":   "true",
			},
		},
		Spec: kubeflowv1.ProfileSpec{
			Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user-%05d@example.org", i)},
			Plugins: []kubeflowv1.Plugin{
				{TypeMeta: metav1.TypeMeta{Kind: "limitrange"}},
				{TypeMeta: metav1.TypeMeta{Kind: "expose"}, Spec: raw(`{"apps":[{"name":"rstudio","service":"rstudio","port":8787}]}`)},
				{TypeMeta: metav1.TypeMeta{Kind: "egress"}, Spec: raw(fmt.Sprintf(`{"hosts":[{"host":"data%05d.blob.core.windows.net"}]}`, i))},
			},
		},
	}
}

// objectKey names one object in the cluster.
type objectKey struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// desired is what the plugins will write for the benchmark's Profiles,
// rendered offline through the same path as `profilekit render`.
type desired struct {
	objects []render.Object
	// conditions lists, per Profile, the conditions its plugins report.
	conditions map[string][]string
}

// renderDesired renders the objects of every Profile and the conditions
// each will carry.
func (b *bench) renderDesired(ctx context.Context, profiles []*kubeflowv1.Profile) (*desired, error) {
	out, err := render.New(b.cfg, b.reg, b.scheme).Render(ctx, profiles)
	if err != nil {
		return nil, fmt.Errorf("render the benchmark's Profiles: %w", err)
	}
	d := &desired{objects: out.Objects, conditions: map[string][]string{}}
	for _, p := range profiles {
		d.conditions[p.Name] = b.conditionsFor(p)
	}
	return d, nil
}

// conditionsFor returns the plugin conditions p will carry: one per plugin
// of the host that serves it.
func (b *bench) conditionsFor(p *kubeflowv1.Profile) []string {
	var out []string
	for _, def := range b.defs {
		sec, on := b.cfg.Section(def.Kind())
		if on && b.cfg.InShard(p.Labels) && sec.Applies(plugins.Listed(p, def.Kind()), p.Labels) {
			out = append(out, def.Condition())
		}
	}
	return out
}

// byKind counts the desired objects per kind.
func (d *desired) byKind() map[string]int {
	m := map[string]int{}
	for _, o := range d.objects {
		m[o.Object.GetKind()]++
	}
	return m
}

// kinds returns the distinct kinds of the desired objects, sorted.
func (d *desired) kinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, o := range d.objects {
		if gvk := o.Object.GroupVersionKind(); !slices.Contains(out, gvk) {
			out = append(out, gvk)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int {
		if a.Group != b.Group {
			if a.Group < b.Group {
				return -1
			}
			return 1
		}
		switch {
		case a.Kind < b.Kind:
			return -1
		case a.Kind > b.Kind:
			return 1
		}
		return 0
	})
	return out
}

// ready reports whether p carries every condition in want with status True.
func ready(p *kubeflowv1.Profile, want []string) bool {
	for _, t := range want {
		c := plugins.FindCondition(p.Status.Conditions, t)
		if c == nil || c.Status != plugins.ConditionTrue {
			return false
		}
	}
	return true
}
