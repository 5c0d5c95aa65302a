package page

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/notebook"
)

// Kinds the page reads.
var (
	quotaGVK          = corev1.SchemeGroupVersion.WithKind("ResourceQuota")
	limitRangeGVK     = corev1.SchemeGroupVersion.WithKind("LimitRange")
	claimGVK          = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	serviceAccountGVK = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	roleBindingGVK    = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
)

// WholeKinds are the kinds the page reads whole (quota use, limit range
// defaults, a volume's phase, a PodDefault's description). A host that
// serves the page caches them whole (only the objects profilekit labels,
// as every owned kind) so that the plugins and the page share one cache
// of each.
var WholeKinds = []schema.GroupVersionKind{claimGVK, limitRangeGVK, quotaGVK, notebook.GroupVersionKind}

// Reads are every kind the page reads: WholeKinds, and ServiceAccounts and
// RoleBindings as metadata. The host's ServiceAccount must be allowed to
// list and watch them all, whichever plugins it runs.
var Reads = append(slices.Clip(WholeKinds), serviceAccountGVK, roleBindingGVK)

// View is everything the page shows of one namespace.
type View struct {
	Namespace string
	Labels    []Pair
	Owner     rbacv1.Subject
	Ready     *Plugin
	Plugins   []Plugin
	Quotas    []Quota
	// Budgets are the namespace's shares of team budgets, and
	// BudgetState the budgets plugin's condition, when it serves the
	// namespace.
	Budgets     []Budget
	BudgetState *Plugin
	Limits      []Limit
	Members     []Member
	Identities  []Identity
	Volumes     []Volume
	PodDefaults []Pair
	// Apps are the namespace's Argo CD apps; ShowApps says whether the
	// host runs the apps plugin at all.
	Apps     []App
	ShowApps bool
	// Missing names the sections the cluster does not serve (no CRD).
	Missing []string
}

// Pair is a name and a value.
type Pair struct{ Name, Value string }

// Quota is one resource of a ResourceQuota: how much is used of how much.
type Quota struct {
	Quota, Resource string
	Used, Hard      string
	// UsedValue and HardValue are the amounts in thousandths, for the bar.
	UsedValue, HardValue int64
}

// Limit is what the LimitRange gives a container of one resource.
type Limit struct {
	LimitRange, Type, Resource        string
	DefaultRequest, Default, Min, Max string
}

// Member is one person, group or service account with a role in the
// namespace, and where the role came from.
type Member struct {
	Name, Role, Source string
}

// Identity is the cloud identity of one ServiceAccount.
type Identity struct {
	ServiceAccount, Cloud, Value string
	// NotReady says why the identity may not work yet: the plugin that
	// grants it is not ready, or did not write this annotation. Empty
	// when it is in effect.
	NotReady string
}

// Volume is one PersistentVolumeClaim.
type Volume struct {
	Name, Phase, Size, StorageClass string
}

// reader reads what the host caches, each kind in the form the host
// caches it: whole for the kinds in whole, metadata only for the others,
// and RoleBindings from members (NewMembers).
type reader struct {
	client.Reader
	scheme  *runtime.Scheme
	whole   []schema.GroupVersionKind
	members client.Reader
	// appsNamespace is Options.AppsNamespace.
	appsNamespace string
}

// list returns the objects of gvk in ns.
func (r reader) list(ctx context.Context, gvk schema.GroupVersionKind, ns string) ([]client.Object, error) {
	var l client.ObjectList
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	switch {
	case gvk == roleBindingGVK || !slices.Contains(r.whole, gvk):
		// RoleBindings come from members, which holds their metadata
		// only, whether or not a plugin caches them whole.
		m := &metav1.PartialObjectMetadataList{}
		m.SetGroupVersionKind(listGVK)
		l = m
	case gvk.Group == "" || gvk.Group == rbacv1.GroupName:
		obj, err := r.scheme.New(listGVK)
		if err != nil {
			return nil, err
		}
		l = obj.(client.ObjectList)
	default:
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(listGVK)
		l = u
	}
	from := r.Reader
	if gvk == roleBindingGVK {
		from = r.members
	}
	if err := from.List(ctx, l, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list %s in %s: %w", gvk.Kind, ns, err)
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		out = append(out, it.(client.Object))
	}
	slices.SortFunc(out, func(a, b client.Object) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// view reads the namespace of Profile p from the cache.
func (r reader) view(ctx context.Context, p *kubeflowv1.Profile) (*View, error) {
	ns := p.Name
	v := &View{Namespace: ns, Owner: p.Spec.Owner}
	for _, k := range sortedKeys(p.Labels) {
		v.Labels = append(v.Labels, Pair{k, p.Labels[k]})
	}
	for _, c := range p.Status.Conditions {
		e := explain(c)
		switch c.Type {
		case plugins.ConditionReady:
			v.Ready = &e
			continue
		case budgetsCondition:
			v.BudgetState = &e
		}
		v.Plugins = append(v.Plugins, e)
	}
	slices.SortFunc(v.Plugins, func(a, b Plugin) int { return strings.Compare(a.Type, b.Type) })
	steps := []struct {
		gvk  schema.GroupVersionKind
		name string
		add  func(client.Object)
	}{
		{quotaGVK, "quota", v.addQuota},
		{limitRangeGVK, "limit range", v.addLimitRange},
		{roleBindingGVK, "members", v.addMember},
		{serviceAccountGVK, "identities", v.addIdentity},
		{claimGVK, "volumes", v.addVolume},
		{notebook.GroupVersionKind, "PodDefaults", v.addPodDefault},
	}
	for _, s := range steps {
		objs, err := r.list(ctx, s.gvk, ns)
		if meta.IsNoMatchError(err) {
			v.Missing = append(v.Missing, s.name)
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			s.add(o)
		}
	}
	if r.appsNamespace != "" {
		var err error
		v.ShowApps = true
		switch v.Apps, err = r.apps(ctx, r.appsNamespace, ns); {
		case meta.IsNoMatchError(err):
			v.Missing = append(v.Missing, "apps")
		case err != nil:
			return nil, err
		}
	}
	// The owner first, then everyone by name.
	slices.SortStableFunc(v.Members, func(a, b Member) int {
		if (a.Source == FromOwner) != (b.Source == FromOwner) {
			if a.Source == FromOwner {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return v, nil
}

func (v *View) addQuota(o client.Object) {
	q, ok := o.(*corev1.ResourceQuota)
	if !ok {
		return
	}
	if budget, ok := budgetQuota(q, v.Namespace); ok {
		v.addBudget(budget, q)
		return
	}
	for _, name := range sortedKeys(q.Spec.Hard) {
		hard := q.Spec.Hard[name]
		used := q.Status.Used[name]
		v.Quotas = append(v.Quotas, Quota{Quota: q.Name, Resource: string(name), Used: used.String(), Hard: hard.String(),
			UsedValue: used.MilliValue(), HardValue: hard.MilliValue()})
	}
}

func (v *View) addLimitRange(o client.Object) {
	lr, ok := o.(*corev1.LimitRange)
	if !ok {
		return
	}
	for _, item := range lr.Spec.Limits {
		names := map[corev1.ResourceName]bool{}
		for _, l := range []corev1.ResourceList{item.DefaultRequest, item.Default, item.Min, item.Max} {
			for n := range l {
				names[n] = true
			}
		}
		for _, n := range sortedKeys(names) {
			v.Limits = append(v.Limits, Limit{LimitRange: lr.Name, Type: string(item.Type), Resource: string(n),
				DefaultRequest: amount(item.DefaultRequest, n), Default: amount(item.Default, n), Min: amount(item.Min, n), Max: amount(item.Max, n)})
		}
	}
}

func (v *View) addVolume(o client.Object) {
	c, ok := o.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	vol := Volume{Name: c.Name, Phase: string(c.Status.Phase), Size: amount(c.Spec.Resources.Requests, corev1.ResourceStorage)}
	if vol.Phase == "" {
		vol.Phase = "Pending"
	}
	if c.Spec.StorageClassName != nil {
		vol.StorageClass = *c.Spec.StorageClassName
	}
	v.Volumes = append(v.Volumes, vol)
}

func (v *View) addPodDefault(o client.Object) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	desc, _, _ := unstructured.NestedString(u.Object, "spec", "desc")
	v.PodDefaults = append(v.PodDefaults, Pair{u.GetName(), desc})
}

// amount returns the quantity of n in l, or "" when l has none.
func amount(l corev1.ResourceList, n corev1.ResourceName) string {
	q, ok := l[n]
	if !ok {
		return ""
	}
	return q.String()
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
