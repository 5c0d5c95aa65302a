package rbac

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Plugin writes Roles and RoleBindings in each Profile's namespace.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the rbac plugin with its config and owned kinds.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns: []schema.GroupVersionKind{
			rbacv1.SchemeGroupVersion.WithKind("Role"),
			rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		},
		// A binding's roleRef, which cannot change, tells whether it must
		// be made afresh (see deleteRebound).
		Reads: []schema.GroupVersionKind{rbacv1.SchemeGroupVersion.WithKind("RoleBinding")},
	}
}

// Kind returns "rbac".
func (Plugin) Kind() string { return Kind }

// Apply writes the Profile's Roles and RoleBindings and deletes the ones of
// ours it no longer wants. A binding of ours whose role changed is deleted
// first and written again, because Kubernetes refuses to change a binding's
// roleRef.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	objs, err := Build(cfg, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	// A binding that could not be replaced fails again in Sync; the others
	// are still written.
	res, rerr := deleteRebound(ctx, req.Client, req.Profile, objs.Bindings)
	synced, err := req.Objects.Sync(ctx, objs.List()...)
	res.Merge(synced)
	return res, errors.Join(rerr, err)
}

// Revoke deletes the Profile's Roles and RoleBindings of ours.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}

// deleteRebound deletes each binding of ours whose roleRef differs from the
// desired one, so that the apply that follows creates it afresh. It reads
// through the host's cache, which holds only our labelled objects; a binding
// we do not own is never deleted here (the Applier reports it as a conflict).
// The delete is guarded by the UID and resourceVersion read, so a binding
// already replaced, or changed since the cache saw it (taken over, say),
// is left alone.
func deleteRebound(ctx context.Context, c plugins.Cluster, p *kubeflowv1.Profile, desired []*rbacv1ac.RoleBindingApplyConfiguration) (plugins.Result, error) {
	var res plugins.Result
	var errs []error
	for _, d := range desired {
		key := types.NamespacedName{Namespace: ptr.Deref(d.Namespace, ""), Name: ptr.Deref(d.Name, "")}
		var live rbacv1.RoleBinding
		if err := c.Get(ctx, key, &live); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("read RoleBinding %s: %w", key, err))
			}
			continue
		}
		want := roleRefOf(d)
		if !plugins.IsOwnedBy(live.Labels, Kind, p.Name) || live.RoleRef == want {
			continue
		}
		uid, version := live.UID, live.ResourceVersion
		err := c.Delete(ctx, &live, client.Preconditions{UID: &uid, ResourceVersion: &version})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone, another object with that name, or changed since: the
			// cache was behind. The apply below copes with whatever is
			// there now.
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("replace RoleBinding %s: %w", key, err))
			continue
		}
		log.FromContext(ctx).V(1).Info("deleted binding to replace its role", "object", key,
			"oldRole", live.RoleRef.Kind+"/"+live.RoleRef.Name, "newRole", want.Kind+"/"+want.Name)
		res.Add(plugins.Change{Kind: "RoleBinding", Namespace: key.Namespace, Name: key.Name, Action: plugins.Deleted})
	}
	return res, errors.Join(errs...)
}

func roleRefOf(b *rbacv1ac.RoleBindingApplyConfiguration) rbacv1.RoleRef {
	if b.RoleRef == nil {
		return rbacv1.RoleRef{}
	}
	return rbacv1.RoleRef{
		APIGroup: ptr.Deref(b.RoleRef.APIGroup, ""),
		Kind:     ptr.Deref(b.RoleRef.Kind, ""),
		Name:     ptr.Deref(b.RoleRef.Name, ""),
	}
}
