package workloadidentity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	iam "google.golang.org/api/iam/v1"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
)

// System names Google IAM in outside-call metrics and condition reasons.
const System = "GCPIAM"

// keyPrefix starts the outside-state key of a Google service account's policy.
const keyPrefix = "gsa/"

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

// Apply annotates the service accounts and grants them the workload identity
// user role on the Google service account (only when that is not what was
// last made true). A Google service account the Profile no longer names loses
// our members.
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
	res, annErr := serviceaccounts.Annotate(ctx, req, cfg.ServiceAccounts, map[string]string{AnnotationGSA: cfg.GCPServiceAccount})
	c, grantErr := p.grant(ctx, req, cfg.GCPServiceAccount, members)
	res.Add(c)
	stale, staleErr := p.revokeAll(ctx, req, cfg, cfg.GCPServiceAccount)
	res.Merge(stale)
	return res, errors.Join(annErr, grantErr, staleErr)
}

// Revoke removes our annotation and our members from every Google service
// account we granted.
func (p Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	res, annErr := serviceaccounts.Unannotate(ctx, req, cfg.ServiceAccounts, AnnotationGSA)
	removed, err := p.revokeAll(ctx, req, cfg, "")
	res.Merge(removed)
	return res, errors.Join(annErr, err)
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

func (p Plugin) grant(ctx context.Context, req plugins.Request, gsa string, members []string) (plugins.Change, error) {
	change := plugins.Change{Kind: "GCPServiceAccountIAMPolicy", Name: gsa, Action: plugins.Unchanged}
	desired := struct {
		ServiceAccount string
		Role           string
		Members        []string
	}{gsa, RoleWorkloadIdentityUser, members}
	_, err := req.Outside.Ensure(ctx, System, keyPrefix+gsa, desired, func(ctx context.Context) error {
		changed, err := p.update(ctx, gsa, func(pol *iam.Policy) bool { return Grant(pol, RoleWorkloadIdentityUser, members) })
		if changed {
			change.Action = plugins.Configured
		}
		return err
	})
	return change, err
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

// revokeAll removes the Profile's members from each Google service account
// recorded as granted, except keep, and forgets it.
func (p Plugin) revokeAll(ctx context.Context, req plugins.Request, cfg *Config, keep string) (plugins.Result, error) {
	var res plugins.Result
	keys, err := req.Outside.Recorded(ctx)
	if err != nil {
		return res, err
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		gsa, ok := strings.CutPrefix(k, keyPrefix)
		if !ok || gsa == keep {
			continue
		}
		members, err := cfg.members(req, gsa)
		if err != nil {
			// Not an account we could have granted: nothing to undo.
			errs = append(errs, req.Outside.Forget(ctx, k))
			continue
		}
		changed := false
		err = req.Outside.Call(ctx, System, func(ctx context.Context) error {
			var err error
			changed, err = p.update(ctx, gsa, func(pol *iam.Policy) bool { return Revoke(pol, RoleWorkloadIdentityUser, members) })
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if changed {
			res.Add(plugins.Change{Kind: "GCPServiceAccountIAMPolicy", Name: gsa, Action: plugins.Deleted})
		}
		errs = append(errs, req.Outside.Forget(ctx, k))
	}
	return res, errors.Join(errs...)
}
