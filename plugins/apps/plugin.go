package apps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/expose"
)

// Reads lists the owned kinds the plugin reads whole: Applications, whose
// Helm values the API server keeps as unknown fields, so a hand edit in them
// need not show in managed fields, only in the values themselves.
var Reads = []schema.GroupVersionKind{ApplicationKind}

// Owns lists the kinds the plugin writes: Applications in the Argo CD
// namespace, and VirtualServices and NetworkPolicies in the Profile's.
var Owns = []schema.GroupVersionKind{
	ApplicationKind,
	expose.VirtualServiceKind,
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
}

// Plugin writes one Argo CD Application per enabled app per Profile, with
// the app's route and network policies.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the apps plugin with routing defaults from the process
// environment (see ConfigFromEnv).
func Definition() plugins.Definition { return DefinitionFromEnv(os.LookupEnv) }

// DefinitionFromEnv returns the apps plugin with routing defaults read
// through lookup.
func DefinitionFromEnv(lookup func(string) (string, bool)) plugins.Definition {
	base := ConfigFromEnv(lookup)
	return plugins.Definition{
		Plugin: Plugin{},
		NewConfig: func() any {
			c := *base
			c.Routing.Gateways = slices.Clone(base.Routing.Gateways)
			c.Routing.Hosts = slices.Clone(base.Routing.Hosts)
			return &c
		},
		Owns:  Owns,
		Reads: Reads,
		// Applications live in the Argo CD namespace.
		OutsideState: true,
	}
}

// Kind returns "apps".
func (Plugin) Kind() string { return Kind }

// Apply writes the Applications, routes and policies of the apps the
// Profile wants and deletes ours of the apps it no longer wants (Argo CD
// then removes what they deployed, which the pass waits for). An opt-in
// label whose value is not a boolean leaves its app as it is and is
// reported.
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	kept, err := KeptNames(ctx, req.Client, cfg, Kind, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	on, invalid, err := Wanted(ctx, req.Client, cfg, req.Profile, kept)
	if err != nil {
		return plugins.Result{}, err
	}
	d, err := Build(cfg, req.Profile, on, kept)
	if err != nil {
		return plugins.Result{}, err
	}
	res, err := req.Objects.Sync(ctx, d.Objects()...)
	if err == nil {
		// An app let go is done once Argo CD has removed what it deployed.
		err = waitFor(ctx, req.Client, Kind, req.Profile.Name, true, &res)
	}
	return res, errors.Join(append([]error{err}, invalid...)...)
}

// Wanted returns the apps p wants. An app whose opt-in label is not a
// boolean is kept when its Application (named by kept) exists (read from
// r, which may be nil offline) and reported among the errors.
func Wanted(ctx context.Context, r client.Reader, cfg *Config, prof *kubeflowv1.Profile, kept Kept) ([]App, []error, error) {
	var on []App
	var invalid []error
	for _, c := range Choose(cfg, prof) {
		if c.Invalid != nil {
			invalid = append(invalid, c.Invalid)
			exists, err := applicationExists(ctx, r, cfg.ArgoCD.Namespace, kept.Name(plugins.Namespace(prof), c.App.Name))
			if err != nil {
				return nil, nil, err
			}
			if exists {
				on = append(on, c.App)
			}
			continue
		}
		if c.On {
			on = append(on, c.App)
		}
	}
	return on, invalid, nil
}

func applicationExists(ctx context.Context, r client.Reader, ns, name string) (bool, error) {
	if r == nil {
		return false, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ApplicationKind)
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read Application %s/%s: %w", ns, name, err)
	}
	return true, nil
}

// Objects returns d's objects for the Applier, Applications first.
func (d Desired) Objects() []runtime.ApplyConfiguration {
	out := make([]runtime.ApplyConfiguration, 0, len(d.Applications)+len(d.Routes)+len(d.Policies))
	for _, a := range d.Applications {
		out = append(out, apply.Encoded(a))
	}
	for _, vs := range d.Routes {
		out = append(out, apply.Encoded(vs))
	}
	for _, np := range d.Policies {
		out = append(out, np)
	}
	return out
}

// Revoke deletes the Profile's Applications, routes and policies, and
// waits (plugins.Result.Wait), so that it runs again, until Argo CD has
// removed what the Applications deployed and the Applications are gone:
// only then may the Profile's finalizer go.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	res, err := req.Objects.DeleteAll(ctx)
	if err != nil {
		return res, err
	}
	return res, WaitGone(ctx, req.Client, Kind, req.Profile.Name, &res)
}

// WaitGone marks res as waiting (plugins.Result.Wait) while Applications
// that plugin kind wrote for Profile profile still exist, such as ones Argo
// CD is still finalizing.
func WaitGone(ctx context.Context, r client.Reader, kind, profile string, res *plugins.Result) error {
	return waitFor(ctx, r, kind, profile, false, res)
}

// waitFor marks res as waiting while Applications that plugin kind wrote
// for Profile profile exist (only those being deleted, when deleting).
func waitFor(ctx context.Context, r client.Reader, kind, profile string, deleting bool, res *plugins.Result) error {
	if r == nil {
		return nil
	}
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(ApplicationKind.GroupVersion().WithKind("ApplicationList"))
	if err := r.List(ctx, &list, client.MatchingLabels(plugins.OwnershipLabels(kind, profile))); err != nil {
		return fmt.Errorf("list Applications: %w", err)
	}
	var left []string
	for _, u := range list.Items {
		if !deleting || u.GetDeletionTimestamp() != nil {
			left = append(left, u.GetNamespace()+"/"+u.GetName())
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		res.Wait(plugins.DefaultWait, fmt.Sprintf("Argo CD to remove what Applications %v deployed (finalizer %s)", left, ResourcesFinalizer))
	}
	return nil
}
