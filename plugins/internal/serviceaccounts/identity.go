package serviceaccounts

import (
	"context"
	"slices"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/identities"
)

// Identity is a cloud identity plugin (irsa, workloadidentity,
// azureidentity): the Profile's service accounts are annotated with a cloud
// identity that the host's policy allows the Profile, and the identity is
// made to trust them. The plugin says what differs: what a config asks for,
// how the identity is made to trust the service accounts, and how every
// grant of a Profile is taken back. The rest is the same for all and lives
// here: the policy is checked on every pass before anything is written, a
// policy narrowed since takes back what earlier passes granted, a report of
// dangling trust holds the Profile, and Revoke fails closed.
type Identity[C any] struct {
	// KindName is the plugin's kind.
	KindName string
	// Ask returns what a pass under cfg asks for. Its error is the
	// Profile's, returned by Apply before anything is written; Revoke
	// uses what Ask returned all the same.
	Ask func(cfg *C, p *kubeflowv1.Profile) (Ask, error)
	// Grant makes the identity trust the service accounts, annotates them
	// and takes back the grants the Profile no longer asks for, in the
	// order the cloud needs (Federate's, unless the cloud says otherwise).
	// allowance is the policy's answer for the identity.
	Grant func(ctx context.Context, req plugins.Request, cfg *C, allowance identities.Allowance) (plugins.Result, error)
	// Sweep takes back every grant of the Profile: those its record holds
	// and, failing closed, the Profile's grants on each identity in named,
	// recorded or not. When others is not nil, it collects the grants it
	// found that trust the Profile's namespace and are not ours, to be
	// reported as dangling.
	Sweep func(ctx context.Context, req plugins.Request, cfg *C, named []string, others *[]string) (plugins.Result, error)
}

// Ask is what one pass of a cloud identity plugin asks for.
type Ask struct {
	// Identity is the identity the Profile asks for, as the host's policy
	// matches it; empty when it names none.
	Identity string
	// Policy is the host's policy of allowed identities.
	Policy identities.Policy
	// ServiceAccounts are the service accounts pointed at the identity.
	ServiceAccounts []string
	// Annotations are what each service account gets; Keys are every
	// annotation key the plugin may write, for taking them back.
	Annotations map[string]string
	Keys        []string
	// AnnotateOnly annotates the service accounts and grants nothing.
	AnnotateOnly bool
}

// IdentityDefinition returns the Definition of a cloud identity plugin p,
// whose config newConfig makes: it keeps outside state and watches the
// service accounts it annotates.
func IdentityDefinition[C any](p plugins.Plugin, newConfig func() *C) plugins.Definition {
	return plugins.Definition{
		Plugin:       p,
		NewConfig:    func() any { return newConfig() },
		OutsideState: true,
		Watches:      []plugins.Watch{Watch()},
	}
}

// Kind returns i.KindName.
func (i Identity[C]) Kind() string { return i.KindName }

// Apply checks what the Profile asks for and the host's policy, then grants.
func (i Identity[C]) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[C](req)
	if err != nil {
		return plugins.Result{}, err
	}
	ask, err := i.Ask(cfg, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	// The platform's to hand out: checked on every pass, before anything
	// is written, the annotation included.
	allowance, err := ask.Policy.Allow(req.Profile, ask.Identity)
	if err != nil {
		// A policy narrowed since an earlier pass: its grants go too.
		return Refuse(ctx, req, ask.ServiceAccounts, err,
			func(ctx context.Context) (plugins.Result, error) { return i.Sweep(ctx, req, cfg, nil, nil) },
			ask.Keys...)
	}
	tagNotChecked(req, allowance, ask.Identity)
	if err := req.Outside.CheckDangling(ctx); err != nil {
		return plugins.Result{}, err
	}
	if ask.AnnotateOnly {
		return Annotate(ctx, req, ask.ServiceAccounts, ask.Annotations)
	}
	return i.Grant(ctx, req, cfg, allowance)
}

// Revoke takes the annotations and every grant back. Failing closed, it
// also sweeps the identity the Profile names (known when it is being
// deleted: its spec still decodes) and the identities the host's policy
// names for it (known when it stopped listing the plugin too), whether or
// not the record holds them: a record lost, or moved from an earlier
// version's that the tenant could edit. A Profile being deleted reports the
// grants of someone else's that trust its namespace, which outlive it.
func (i Identity[C]) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[C](req)
	if err != nil {
		return plugins.Result{}, err
	}
	ask, _ := i.Ask(cfg, req.Profile)
	var named []string
	if !ask.AnnotateOnly {
		if ask.Identity != "" {
			named = append(named, ask.Identity)
		}
		for _, id := range ask.Policy.Named(req.Profile) {
			if !slices.Contains(named, id) {
				named = append(named, id)
			}
		}
	}
	var others *[]string
	if !req.Profile.DeletionTimestamp.IsZero() {
		others = &[]string{}
	}
	return Defederate(ctx, req, ask.ServiceAccounts,
		func(ctx context.Context) (plugins.Result, error) {
			res, err := i.Sweep(ctx, req, cfg, named, others)
			if err == nil && others != nil {
				err = req.Outside.ReportDangling(ctx, *others)
			}
			return res, err
		},
		ask.Keys...)
}
