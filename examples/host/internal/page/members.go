package page

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/core"
)

// Where a member's role comes from, as the page says it.
const (
	FromOwner        = "the Profile's owner"
	FromContributors = "the Profile's contributors"
	FromDashboard    = "Manage contributors in the dashboard"
)

// NewMembers returns a reader of every RoleBinding in the cluster, kept by
// a cache of its own that mgr starts (on every replica, before the page
// serves): KFAM, the access-management service behind the dashboard's
// Manage Contributors, makes bindings without profilekit's labels, which
// the manager's cache never holds. Each binding is kept as its name,
// namespace and resource version, with KFAM's user and role annotations
// and profilekit's managed-by and plugin labels when it has them: nothing
// else of it reaches memory. Only a host that serves the page makes it, so
// the plugins' caches stay as narrow as they are without the page.
func NewMembers(mgr manager.Manager) (client.Reader, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform:            keepMembership,
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cache of RoleBindings for the tenant page: %w", err)
	}
	// The informer is made before the cache starts, so that the manager
	// waits for it to sync before the page serves; the context only bounds
	// a wait for a started cache. The index finds a user's bindings
	// without a copy of every other one.
	err = c.IndexField(context.Background(), bindingMeta(), userIndex, func(o client.Object) []string {
		if u := o.GetAnnotations()[core.AnnotationUser]; u != "" {
			return []string{u}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cache of RoleBindings for the tenant page: %w", err)
	}
	if err := mgr.Add(membersCache{c}); err != nil {
		return nil, fmt.Errorf("cache of RoleBindings for the tenant page: %w", err)
	}
	return c, nil
}

// userIndex indexes the members cache by KFAM's user annotation.
const userIndex = "metadata.annotations.user"

// membersCache makes the manager start the cache with its own caches, on
// every replica, and wait for it to sync before the page serves.
type membersCache struct{ cache.Cache }

// GetCache returns the cache.
func (m membersCache) GetCache() cache.Cache { return m.Cache }

func bindingMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(roleBindingGVK)
	return m
}

// keepMembership reduces a RoleBinding's metadata to what the page reads.
// It may see an object twice (a watch-list sync transforms each object
// again); the second time changes nothing.
func keepMembership(in any) (any, error) {
	m, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	out := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
		Annotations: keep(m.Annotations, core.AnnotationUser, core.AnnotationRole),
		Labels:      keep(m.Labels, plugins.LabelManagedBy, plugins.LabelPlugin),
	}}
	return out, nil
}

// keep returns the entries of m under keys, or nil when it has none.
func keep(m map[string]string, keys ...string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}

// addMember adds a binding that carries KFAM's user and role annotations,
// and says where it came from: the owner's (the core plugin's, or the
// upstream controller's namespaceAdmin), the Profile's contributors (the
// contributors plugin's), or the dashboard's Manage Contributors (KFAM's,
// which carry no profilekit label). What a binding's annotations say is
// shown as the dashboard shows it: both list what KFAM's annotations name.
func (v *View) addMember(o client.Object) {
	a := o.GetAnnotations()
	user, role := a[core.AnnotationUser], a[core.AnnotationRole]
	if user == "" || role == "" {
		return
	}
	ours := o.GetLabels()[plugins.LabelManagedBy] == plugins.ManagedByValue
	kind := o.GetLabels()[plugins.LabelPlugin]
	var source string
	switch {
	case ours && kind == plugins.CoreKind, !ours && o.GetName() == core.OwnerRoleBinding:
		source = FromOwner
	case ours && kind == contributors.Kind:
		source = FromContributors
	case ours:
		source = "profilekit's " + kind + " plugin"
	default:
		source = FromDashboard
	}
	v.Members = append(v.Members, Member{Name: user, Role: role, Source: source})
}
