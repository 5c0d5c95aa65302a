package contributors

import (
	"context"
	"errors"
	"slices"
	"strings"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
// owns, and a metadata watch on the contributor bindings nobody labelled,
// so that the Profile hears within seconds when a hand-made binding that
// held one of its names goes.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		Owns:      []schema.GroupVersionKind{roleBindingGVK, policyGVK},
		Watches:   []plugins.Watch{{Object: apply.NewMetadata(roleBindingGVK), Profiles: handMadeContributor}},
	}
}

// handMadeContributor maps a RoleBinding in the shape of a KFAM contributor
// (the user annotation) that this plugin did not write to the Profile of
// its namespace, which has the namespace's name. The map runs on both sides
// of an update and on a delete.
func handMadeContributor(_ context.Context, o client.Object) []string {
	if _, ok := o.GetAnnotations()[core.AnnotationUser]; !ok || o.GetLabels()[plugins.LabelPlugin] == Kind {
		return nil
	}
	return []string{o.GetNamespace()}
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
	return res, errors.Join(berr, heldByOthers(cfg, req.Profile, res), serr)
}

// Revoke deletes every RoleBinding and AuthorizationPolicy of ours for the
// Profile; hand-made ones are left.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}

// heldByOthers returns, for each entry whose objects Sync skipped because
// an object of the name exists that is not ours, a Conflict that says who
// likely made it and what to do.
func heldByOthers(cfg *Config, p *kubeflowv1.Profile, res plugins.Result) error {
	skipped := map[string][]string{}
	for _, c := range res.Changes {
		if c.Action == plugins.Skipped && (c.Kind == roleBindingGVK.Kind || c.Kind == policyGVK.Kind) {
			skipped[c.Name] = append(skipped[c.Name], c.Kind)
		}
	}
	if len(skipped) == 0 {
		return nil
	}
	var errs []error
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
