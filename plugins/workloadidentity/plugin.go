package workloadidentity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	iam "google.golang.org/api/iam/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
)

// System names Google IAM in outside-call metrics and condition reasons.
const System = "GCPIAM"

// conflictRetries is how often a policy changed by someone else between our
// read and our write is read and changed again, within one call.
const conflictRetries = 5

// Plugin annotates the Profile's service accounts with a Google service
// account and lets them act as it.
type Plugin struct {
	iam IAM
}

var _ plugins.Plugin = Plugin{}

// Definition returns the plugin, which calls IAM through c.
func Definition(c IAM) plugins.Definition {
	return plugins.Definition{
		Plugin:       Plugin{iam: c},
		NewConfig:    func() any { return NewConfig() },
		OutsideState: true,
		Watches:      []plugins.Watch{serviceaccounts.Watch()},
	}
}

// Kind returns "WorkloadIdentity".
func (Plugin) Kind() string { return Kind }

// Apply grants the service accounts the workload identity user role on the
// Google service account (only when that is not what was last made true),
// then annotates them. A Google service account the Profile no longer names
// then loses the members we added.
func (p Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	if cfg.GCPServiceAccount == "" {
		return plugins.Result{}, plugins.Terminalf(plugins.ReasonInvalidSpec, "plugin %s: gcpServiceAccount: required (in the Profile or the host's defaults)", Kind)
	}
	members, err := cfg.members(req, cfg.GCPServiceAccount)
	if err != nil {
		return plugins.Result{}, plugins.Terminal(plugins.ReasonInvalidSpec, err)
	}
	// The platform's to hand out: checked on every pass, before anything
	// is written.
	allowance, err := cfg.AllowedIdentities.Allow(req.Profile, cfg.GCPServiceAccount)
	if err != nil {
		// A policy narrowed since an earlier pass: its grants go too.
		return serviceaccounts.Refuse(ctx, req, cfg.ServiceAccounts, err,
			func(ctx context.Context) (plugins.Result, error) { return p.revokeAll(ctx, req, cfg, nil) },
			AnnotationGSA)
	}
	if err := req.Outside.CheckDangling(ctx); err != nil {
		return plugins.Result{}, err
	}
	var keep []string
	return serviceaccounts.Federate(ctx, req, cfg.ServiceAccounts, map[string]string{AnnotationGSA: cfg.GCPServiceAccount},
		func(ctx context.Context) (c plugins.Change, err error) {
			keep, c, err = p.grant(ctx, req, cfg.GCPServiceAccount, members, allowance.Shared)
			return c, err
		},
		func(ctx context.Context) (plugins.Result, error) { return p.revokeAll(ctx, req, cfg, keep) })
}

// Revoke removes our annotation and our members from every Google service
// account we granted and, failing closed, the Profile's members from the
// account it names and the accounts the host's allowances name for it when
// the record says nothing of them (a
// record lost, or moved from an earlier version's that the tenant could
// edit). A member the record holds as granted by someone else is left and
// logged as dangling trust.
func (p Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	return serviceaccounts.Defederate(ctx, req, cfg.ServiceAccounts,
		func(ctx context.Context) (plugins.Result, error) {
			recorded, err := req.Outside.Recorded(ctx)
			if err != nil {
				return plugins.Result{}, err
			}
			// The foreign keys stay in the record (which goes with the
			// Profile): a pass that runs again must still know those
			// members are someone else's, or the fail-closed removal would
			// take them.
			keep := slices.DeleteFunc(slices.Clone(recorded), func(k string) bool { return !strings.HasPrefix(k, foreignPrefix) })
			res, err := p.revokeAll(ctx, req, cfg, keep)
			errs := []error{err}
			for _, gsa := range cfg.named(req.Profile) {
				errs = append(errs, p.revokeUnrecorded(ctx, req, cfg, gsa, recorded, &res))
			}
			return res, errors.Join(errs...)
		},
		AnnotationGSA)
}

// named returns the accounts where the Profile's grants can be whatever the
// record says: the one it names (or the host's default), and the ones the
// host's allowances name for it.
func (c *Config) named(p *kubeflowv1.Profile) []string {
	var out []string
	if c.GCPServiceAccount != "" {
		out = append(out, c.GCPServiceAccount)
	}
	for _, gsa := range c.AllowedIdentities.Named(p) {
		if !slices.Contains(out, gsa) {
			out = append(out, gsa)
		}
	}
	return out
}

// revokeUnrecorded removes from account gsa the members of
// its service accounts that the record holds neither as granted nor as
// someone else's, and reports the ones held as someone else's, when the
// Profile is being deleted, as dangling trust (Outside.ReportDangling).
func (p Plugin) revokeUnrecorded(ctx context.Context, req plugins.Request, cfg *Config, gsa string, recorded []string, res *plugins.Result) error {
	members, err := cfg.members(req, gsa)
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
	if !req.Profile.DeletionTimestamp.IsZero() {
		if err := req.Outside.ReportDangling(ctx, dangling); err != nil {
			return err
		}
	}
	return p.removeMembers(ctx, req, gsa, unrecorded, res)
}

// members returns the IAM members of the Profile's service accounts in the
// pool of gsa (or the configured one).
func (c *Config) members(req plugins.Request, gsa string) ([]string, error) {
	withGSA := *c
	withGSA.GCPServiceAccount = gsa
	pool, err := withGSA.Pool()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(c.ServiceAccounts))
	for _, sa := range c.ServiceAccounts {
		out = append(out, Member(pool, plugins.Namespace(req.Profile), sa))
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
