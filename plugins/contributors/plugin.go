package contributors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/core"
)

// The kinds the plugin writes.
var (
	roleBindingGVK = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	policyGVK      = securityv1.SchemeGroupVersion.WithKind("AuthorizationPolicy")
)

// Plugin writes the RoleBindings and AuthorizationPolicies of a Profile's
// contributors. Its zero value works.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the contributors plugin: its config, the kinds it
// owns, and metadata watches on the contributor bindings and policies
// nobody labelled, so that the Profile hears within seconds when a
// hand-made binding or policy that held one of its names goes. KFAM
// deletes a contributor's binding first and its policy a moment later: a
// pass can write our binding and still meet KFAM's policy, and only the
// policy's own deletion brings the Profile back to write ours. The watches
// wake a Profile only for what the plugin reads of such an object: that it
// is there, and whose it is (its ownership labels).
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{roleBindingGVK, policyGVK},
		Watches: []plugins.Watch{
			{Object: apply.NewMetadata(roleBindingGVK), Profiles: handMadeContributor, Changed: holderChanged},
			{Object: apply.NewMetadata(policyGVK), Profiles: handMadeContributor, Changed: holderChanged},
		},
	}
}

// handMadeContributor maps a RoleBinding or AuthorizationPolicy in the
// shape of a KFAM contributor (the user annotation) that this plugin did
// not write to the Profile of its namespace, which has the namespace's
// name. The map runs on both sides of an update and on a delete. The
// upstream names (the owner's namespaceAdmin and ns-owner-access-istio,
// which the core plugin or the upstream controller makes) are never a
// contributor's, and wake nothing.
func handMadeContributor(_ context.Context, o client.Object) []string {
	if _, ok := o.GetAnnotations()[core.AnnotationUser]; !ok || o.GetLabels()[plugins.LabelPlugin] == Kind || plugins.IsUpstreamName(o.GetName()) {
		return nil
	}
	return []string{o.GetNamespace()}
}

// holderChanged reports whether an update of a binding or policy changed
// what the plugin reads of it: its ownership labels (whose it is, see
// isForeign) or its contributor annotation (its shape).
func holderChanged(_ any, before, after client.Object) bool {
	_, wasShaped := before.GetAnnotations()[core.AnnotationUser]
	_, isShaped := after.GetAnnotations()[core.AnnotationUser]
	ol, nl := before.GetLabels(), after.GetLabels()
	return wasShaped != isShaped || ol[plugins.LabelManagedBy] != nl[plugins.LabelManagedBy] ||
		ol[plugins.LabelPlugin] != nl[plugins.LabelPlugin] || ol[plugins.LabelProfile] != nl[plugins.LabelProfile]
}

// Kind returns "contributors".
func (Plugin) Kind() string { return Kind }

// Apply writes the objects of the Profile's valid entries and deletes the
// ones of ours no entry wants any more: those of an entry removed, of a
// role changed (the name holds the role) and of an entry now refused. An
// entry whose name a binding or policy made without profilekit holds gets
// nothing written, and the condition says what to do.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	objs, berr := Build(cfg, req.Profile)
	res, serr := req.Objects.Sync(ctx, objs.List()...)
	return res, errors.Join(berr, heldByOthers(ctx, req.LiveReader(), cfg, req.Profile, res), withoutConflicts(serr))
}

// withoutConflicts drops from Sync's errors the Conflicts of objects of
// ours that another writer holds: heldByOthers reports each of them, once
// it has read that the object is still there.
func withoutConflicts(err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var te *plugins.TerminalError
	return errors.Join(slices.DeleteFunc(slices.Clone(errs), func(e error) bool {
		return errors.As(e, &te) && te.Reason == plugins.ReasonConflict
	})...)
}

// Revoke deletes every RoleBinding and AuthorizationPolicy of ours for the
// Profile; hand-made ones are left.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}

// heldByOthers returns, for each entry whose objects Sync skipped because
// an object of the name exists that is not ours, a Conflict that says who
// likely made it and what to do. Each skipped object is read again from
// the API server first: KFAM deletes what the dashboard made moments
// apart, so one found a moment ago may be gone, and the condition must not
// name it. One that is gone is a retried error instead, and the next pass
// writes ours.
func heldByOthers(ctx context.Context, live client.Reader, cfg *Config, p *kubeflowv1.Profile, res plugins.Result) error {
	skipped := map[string][]string{}
	var errs []error
	for _, c := range res.Changes {
		if c.Action != plugins.Skipped || (c.Kind != roleBindingGVK.Kind && c.Kind != policyGVK.Kind) {
			continue
		}
		foreign, err := isForeign(ctx, live, p, c)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !foreign:
			errs = append(errs, fmt.Errorf("%s %s/%s that another writer held is gone or ours now; will write it again", c.Kind, c.Namespace, c.Name))
		default:
			skipped[c.Name] = append(skipped[c.Name], c.Kind)
		}
	}
	if len(skipped) == 0 {
		return errors.Join(errs...)
	}
	for _, e := range judge(cfg, p) {
		kinds, ok := skipped[e.name]
		if !ok || len(e.problems) > 0 {
			continue
		}
		delete(skipped, e.name)                                                        // entries the same as one before share its objects
		slices.SortFunc(kinds, func(a, b string) int { return strings.Compare(b, a) }) // RoleBinding first
		what, verb, it := strings.Join(kinds, " and ")+" "+e.name, "was", "it"
		if len(kinds) > 1 {
			verb, it = "were", "them"
		}
		errs = append(errs, plugins.Terminalf(plugins.ReasonConflict,
			"%s: %s %s made outside profilekit, likely in the dashboard; left untouched, the grant stays. To let the Profile manage this contributor, delete %s; to keep %s, remove the entry",
			e.describe(), what, verb, it, it))
	}
	return errors.Join(errs...)
}

// isForeign reports whether the object of change c exists, read from the
// API server, and is not this plugin's for p.
func isForeign(ctx context.Context, live client.Reader, p *kubeflowv1.Profile, c plugins.Change) (bool, error) {
	gvk := roleBindingGVK
	if c.Kind == policyGVK.Kind {
		gvk = policyGVK
	}
	obj := apply.NewMetadata(gvk)
	err := live.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
	}
	return !plugins.IsOwnedBy(obj.GetLabels(), Kind, p.Name), nil
}
