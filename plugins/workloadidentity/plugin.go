package workloadidentity

import (
	"context"
	"errors"
	"fmt"
	"slices"

	iam "google.golang.org/api/iam/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
)

// System names Google IAM in outside-call metrics and condition reasons.
const System = "GCPIAM"

// conflictRetries is how often a policy changed by someone else between our
// read and our write is read and changed again, within one call.
const conflictRetries = 5

// Plugin annotates the Profile's service accounts with a Google service
// account and lets them act as it.
// Its Apply and Revoke
// are those of every cloud identity plugin (see the package doc).
type Plugin struct {
	serviceaccounts.Identity[Config]
	iam IAM
}

var _ plugins.Plugin = Plugin{}

// Definition returns the plugin, which calls IAM through c.
func Definition(c IAM) plugins.Definition {
	p := Plugin{iam: c}
	p.Identity = serviceaccounts.Identity[Config]{KindName: Kind, Ask: ask, Grant: p.grant, Sweep: p.sweep}
	return serviceaccounts.IdentityDefinition(p, NewConfig)
}

// ask is what a pass under cfg asks for.
func ask(cfg *Config, p *kubeflowv1.Profile) (serviceaccounts.Ask, error) {
	a := serviceaccounts.Ask{
		Identity:        cfg.GCPServiceAccount,
		Policy:          cfg.AllowedIdentities,
		ServiceAccounts: cfg.ServiceAccounts,
		Annotations:     map[string]string{AnnotationGSA: cfg.GCPServiceAccount},
		Keys:            []string{AnnotationGSA},
	}
	if cfg.GCPServiceAccount == "" {
		return a, plugins.Terminalf(plugins.ReasonInvalidSpec, "plugin %s: gcpServiceAccount: required (in the Profile or the host's defaults)", Kind)
	}
	if _, err := cfg.members(p, cfg.GCPServiceAccount); err != nil {
		return a, plugins.Terminal(plugins.ReasonInvalidSpec, err)
	}
	return a, nil
}

// grant makes the account trust the service accounts, annotates them, and
// then takes our members off the accounts the Profile named before.
func (p Plugin) grant(ctx context.Context, req plugins.Request, cfg *Config, allowance identities.Allowance) (plugins.Result, error) {
	members, err := cfg.members(req.Profile, cfg.GCPServiceAccount)
	if err != nil {
		return plugins.Result{}, plugins.Terminal(plugins.ReasonInvalidSpec, err)
	}
	var keep []string
	return serviceaccounts.Federate(ctx, req, cfg.ServiceAccounts, map[string]string{AnnotationGSA: cfg.GCPServiceAccount},
		func(ctx context.Context) (c plugins.Change, err error) {
			keep, c, err = p.grantMembers(ctx, req, cfg.GCPServiceAccount, members, allowance.Shared)
			return c, err
		},
		func(ctx context.Context) (plugins.Result, error) { return p.revokeAll(ctx, req, cfg, keep) })
}

// sweep removes our members from every account the record holds, then,
// failing closed, the Profile's members that the record says nothing of
// from each account in named. The foreign keys stay in the record (see
// revokeAll).
func (p Plugin) sweep(ctx context.Context, req plugins.Request, cfg *Config, named []string, others *[]string) (plugins.Result, error) {
	recorded, err := req.Outside.Recorded(ctx)
	if err != nil {
		return plugins.Result{}, err
	}
	res, err := p.revokeAll(ctx, req, cfg, nil)
	errs := []error{err}
	for _, gsa := range named {
		errs = append(errs, p.revokeUnrecorded(ctx, req, cfg, gsa, recorded, others, &res))
	}
	return res, errors.Join(errs...)
}

// revokeUnrecorded removes from account gsa the members of
// its service accounts that the record holds neither as granted nor as
// someone else's, and adds the ones held as someone else's to others, when
// it is not nil.
func (p Plugin) revokeUnrecorded(ctx context.Context, req plugins.Request, cfg *Config, gsa string, recorded []string, others *[]string, res *plugins.Result) error {
	members, err := cfg.members(req.Profile, gsa)
	if err != nil {
		return nil // not an account we could have granted
	}
	var unrecorded, dangling []string
	for _, m := range members {
		switch {
		case slices.Contains(recorded, foreignKey(gsa, m)):
			dangling = append(dangling, fmt.Sprintf("%s holds %s on %s, granted by someone else", m, RoleWorkloadIdentityUser, gsa))
		case !slices.Contains(recorded, grantKey(gsa, m)) && !slices.Contains(recorded, legacyPrefix+gsa):
			unrecorded = append(unrecorded, m)
		}
	}
	if others != nil {
		*others = append(*others, dangling...)
	}
	return p.removeMembers(ctx, req, gsa, unrecorded, res)
}

// members returns the IAM members of the Profile's service accounts in the
// pool of gsa (or the configured one).
func (c *Config) members(p *kubeflowv1.Profile, gsa string) ([]string, error) {
	withGSA := *c
	withGSA.GCPServiceAccount = gsa
	pool, err := withGSA.Pool()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(c.ServiceAccounts))
	for _, sa := range c.ServiceAccounts {
		out = append(out, Member(pool, plugins.Namespace(p), sa))
	}
	return out, nil
}

// update reads the policy of gsa, changes it with edit, and writes it with
// the etag it was read with; a write that lost to someone else's is done
// again on a fresh read. It reports whether a policy was written.
func (p Plugin) update(ctx context.Context, gsa string, edit func(*iam.Policy) bool) (bool, error) {
	project, err := Project(gsa)
	if err != nil {
		return false, plugins.Terminal(plugins.ReasonInvalidSpec, err)
	}
	resource := Resource(project, gsa)
	for range conflictRetries {
		pol, err := p.iam.Policy(ctx, resource)
		if err != nil {
			return false, fmt.Errorf("read IAM policy of %s: %w", gsa, err)
		}
		if !edit(pol) {
			return false, nil
		}
		err = p.iam.SetPolicy(ctx, resource, pol)
		if errors.Is(err, ErrConcurrentChange) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("write IAM policy of %s: %w", gsa, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("write IAM policy of %s: %d attempts: %w", gsa, conflictRetries, ErrConcurrentChange)
}
