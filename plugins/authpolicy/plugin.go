package authpolicy

import (
	"context"
	"errors"
	"fmt"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// Plugin writes each Profile's Istio AuthorizationPolicies.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// roleBindings is the watched kind: metadata only, since the annotations are
// all the plugin reads, so that no RoleBinding's body is kept in memory.
var roleBindings = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")

// Definition returns the authpolicy plugin with its config, its owned kind,
// and a watch on RoleBindings so that a contributor added or removed changes
// the policy within seconds. The watch wakes a Profile only for what
// Contributors reads: a contributor binding's annotations and its deletion.
func Definition() plugins.Definition {
	rb := &metav1.PartialObjectMetadata{}
	rb.SetGroupVersionKind(roleBindings)
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{securityv1.SchemeGroupVersion.WithKind("AuthorizationPolicy")},
		Watches:   []plugins.Watch{{Object: rb, Profiles: contributorProfile, Changed: contributorChanged}},
	}
}

// contributorProfile maps a contributor RoleBinding to the Profile of its
// namespace, which has the namespace's name. Other RoleBindings concern no
// Profile; the map runs on both sides of an update, so a binding that loses
// its annotations still wakes its Profile.
func contributorProfile(_ context.Context, o client.Object) []string {
	if _, ok := o.GetAnnotations()[AnnotationUser]; !ok || plugins.IsUpstreamName(o.GetName()) {
		// The owner's namespaceAdmin carries the annotations too; the
		// owner comes from the Profile (see Contributors).
		return nil
	}
	return []string{o.GetNamespace()}
}

// contributorChanged reports whether an update of a RoleBinding changed
// what Contributors reads of it: the user and role annotations, and
// whether it is being deleted.
func contributorChanged(_ any, before, after client.Object) bool {
	oa, na := before.GetAnnotations(), after.GetAnnotations()
	return oa[AnnotationUser] != na[AnnotationUser] || oa[AnnotationRole] != na[AnnotationRole] ||
		before.GetDeletionTimestamp().IsZero() != after.GetDeletionTimestamp().IsZero()
}

// Kind returns "authpolicy".
func (Plugin) Kind() string { return Kind }

// Apply reads the contributors from the RoleBindings of the Profile's
// namespace and writes the access policy and the further policies. Users
// and groups the access policy cannot admit exactly are left out of it and
// reported as a terminal InvalidSpec error, after the rest is applied.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	reader := req.WatchedReader()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(roleBindings.GroupVersion().WithKind("RoleBindingList"))
	if err := reader.List(ctx, list, client.InNamespace(plugins.Namespace(req.Profile))); err != nil {
		return plugins.Result{}, fmt.Errorf("list role bindings: %w", err)
	}
	// A user or group the policy cannot admit is left out of it and
	// reported once the rest is applied.
	policies, buildErr := Build(cfg, req.Profile, Contributors(list.Items, cfg.ContributorRoles))
	desired := make([]runtime.ApplyConfiguration, 0, len(policies))
	for _, p := range policies {
		desired = append(desired, apply.Encoded(p))
	}
	res, err := req.Objects.Sync(ctx, desired...)
	return res, errors.Join(err, buildErr)
}

// Revoke deletes the Profile's AuthorizationPolicies that this plugin wrote.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}
