package irsa

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
)

// System names AWS IAM in outside-call metrics and condition reasons.
const System = "AWSIAM"

// ReasonTrustPolicyTooLarge is a trust policy that would pass IAM's size limit.
const ReasonTrustPolicyTooLarge = "TrustPolicyTooLarge"

// keyPrefix starts the outside-state key of a role's trust policy.
const keyPrefix = "role/"

// Plugin annotates the Profile's service accounts with an IAM role and lets
// them assume it.
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

// roleLocks serializes the read, edit and write of each role's trust
// policy in the process. IAM replaces the whole document and takes no
// precondition, and one role may serve many Profiles whose passes run at
// once: without the lock, two passes that read the same document would
// each write it back with only their own statement, and one would be lost
// while its record says it was made true.
var roleLocks = struct {
	mu    sync.Mutex
	roles map[string]*sync.Mutex
}{roles: map[string]*sync.Mutex{}}

// lockRole locks role's trust policy and returns its unlock.
func lockRole(role string) (unlock func()) {
	roleLocks.mu.Lock()
	l, ok := roleLocks.roles[role]
	if !ok {
		l = &sync.Mutex{}
		roleLocks.roles[role] = l
	}
	roleLocks.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// ask is what a pass under cfg asks for.
func ask(cfg *Config, _ *kubeflowv1.Profile) (serviceaccounts.Ask, error) {
	a := serviceaccounts.Ask{
		Identity:        cfg.AwsIAMRole,
		Policy:          cfg.AllowedIdentities,
		ServiceAccounts: cfg.ServiceAccounts,
		Annotations:     map[string]string{AnnotationRoleARN: cfg.AwsIAMRole},
		Keys:            []string{AnnotationRoleARN},
		AnnotateOnly:    cfg.AnnotateOnly,
	}
	if cfg.AwsIAMRole == "" {
		return a, plugins.Terminalf(plugins.ReasonInvalidSpec, "plugin %s: awsIamRole: required", Kind)
	}
	if _, err := RoleName(cfg.AwsIAMRole); err != nil {
		return a, plugins.Terminal(plugins.ReasonInvalidSpec, err)
	}
	return a, nil
}

// grant makes the role trust the service accounts, annotates them, and
// then takes our subjects off the roles the Profile named before.
func (p Plugin) grant(ctx context.Context, req plugins.Request, cfg *Config, allowance identities.Allowance) (plugins.Result, error) {
	role, err := RoleName(cfg.AwsIAMRole)
	if err != nil {
		return plugins.Result{}, plugins.Terminal(plugins.ReasonInvalidSpec, err)
	}
	return serviceaccounts.Federate(ctx, req, cfg.ServiceAccounts, map[string]string{AnnotationRoleARN: cfg.AwsIAMRole},
		func(ctx context.Context) (plugins.Change, error) {
			return p.trust(ctx, req, cfg, role, allowance)
		},
		func(ctx context.Context) (plugins.Result, error) { return p.untrustAll(ctx, req, cfg, role, nil, nil) })
}

// sweep removes our subjects from every role the record holds, then from
// each role in named that was not among them.
func (p Plugin) sweep(ctx context.Context, req plugins.Request, cfg *Config, named []string, others *[]string) (plugins.Result, error) {
	swept := map[string]bool{}
	res, err := p.untrustAll(ctx, req, cfg, "", swept, others)
	errs := []error{err}
	for _, arn := range named {
		role, rerr := RoleName(arn)
		if rerr != nil || swept[role] {
			continue
		}
		swept[role] = true
		c, uerr := p.untrust(ctx, req, cfg, role, others)
		if uerr == nil && c.Action != "" {
			res.Add(c)
		}
		errs = append(errs, uerr)
	}
	return res, errors.Join(errs...)
}

func (c *Config) edit(namespace string) trustpolicy.Edit {
	e := trustpolicy.Edit{Provider: c.OIDCProvider, Audience: c.Audience, Namespace: namespace, MaxSize: c.MaxPolicySize,
		Wildcard: c.Subjects == SubjectsWildcard, Adopt: c.AdoptStatements}
	for _, sa := range c.ServiceAccounts {
		if e.Wildcard {
			e.Subjects = append(e.Subjects, serviceaccounts.Subject("*", sa))
		} else {
			e.Subjects = append(e.Subjects, serviceaccounts.Subject(namespace, sa))
		}
	}
	return e
}

// trust makes the role trust the Profile's service accounts. A role that
// another Profile's record holds as made is a Conflict unless shared (or
// the subjects are the wildcard form, which serves every Profile).
func (p Plugin) trust(ctx context.Context, req plugins.Request, cfg *Config, role string, allowance identities.Allowance) (plugins.Change, error) {
	change := plugins.Change{Kind: "IAMRoleTrustPolicy", Name: role, Action: plugins.Unchanged}
	edit := cfg.edit(plugins.Namespace(req.Profile))
	desired := struct {
		Role string
		Edit trustpolicy.Edit
	}{cfg.AwsIAMRole, edit}
	claims := !allowance.Shared && !edit.Wildcard
	held := func(holder string) error {
		return plugins.Terminalf(plugins.ReasonConflict,
			"awsIamRole %q already serves Profile %s; a role serves one Profile unless the host's allowance marks it shared", cfg.AwsIAMRole, holder)
	}
	if claims {
		if err := serviceaccounts.HeldOffline(ctx, req, keyPrefix+role, held); err != nil {
			return change, err
		}
	}
	// Recorded ahead: a statement made and never recorded would trust the
	// Profile's service accounts after it stopped naming the role.
	_, err := req.Outside.EnsureAhead(ctx, System, keyPrefix+role, desired, func(ctx context.Context) error {
		if allowance.NeedsTag() {
			tags, err := p.iam.RoleTags(ctx, role)
			if errors.Is(err, ErrNoRole) {
				return plugins.Terminalf(plugins.ReasonInvalidSpec, "awsIamRole %q: %v", cfg.AwsIAMRole, err)
			}
			if err != nil {
				return err
			}
			if err := allowance.CheckTag(req.Profile, cfg.AwsIAMRole, tags); err != nil {
				return err
			}
		}
		if claims {
			holder, err := req.Outside.Claim(ctx, keyPrefix+role)
			if err != nil {
				return err
			}
			if holder != "" {
				return held(holder)
			}
		}
		defer lockRole(role)()
		doc, err := p.iam.TrustPolicy(ctx, role)
		if errors.Is(err, ErrNoRole) {
			return plugins.Terminalf(plugins.ReasonInvalidSpec, "awsIamRole %q: %v", cfg.AwsIAMRole, err)
		}
		if err != nil {
			return err
		}
		if edit.Provider == "" {
			if edit.Provider, err = trustpolicy.ProviderFromPolicy(doc); err != nil {
				return plugins.Terminalf(plugins.ReasonInvalidConfig, "role %s: %v", role, err)
			}
		}
		out, changed, err := trustpolicy.AddSubjects(doc, edit)
		var se *trustpolicy.SizeError
		if errors.As(err, &se) {
			return plugins.Terminalf(ReasonTrustPolicyTooLarge, "role %s: %v", role, err)
		}
		if err != nil {
			return plugins.Terminalf(plugins.ReasonInvalidConfig, "role %s: %v", role, err)
		}
		if !changed {
			return nil
		}
		if err := p.iam.SetTrustPolicy(ctx, role, out); err != nil {
			return err
		}
		change.Action = plugins.Configured
		return nil
	})
	return change, err
}

// untrustAll removes the Profile's subjects from each role recorded as made
// true, except keep, and forgets it. Each role it tries is set in swept
// (when not nil), and others gathers what untrust finds (when not nil).
func (p Plugin) untrustAll(ctx context.Context, req plugins.Request, cfg *Config, keep string, swept map[string]bool, others *[]string) (plugins.Result, error) {
	var res plugins.Result
	err := req.Outside.Sweep(ctx, func(k string) (string, bool) {
		role, ok := strings.CutPrefix(k, keyPrefix)
		return role, ok && role != keep
	}, func(ctx context.Context, role string, _ []string) error {
		if swept != nil {
			swept[role] = true
		}
		c, err := p.untrust(ctx, req, cfg, role, others)
		if err == nil && c.Action != "" {
			res.Add(c)
		}
		return err
	})
	return res, err
}

// untrust removes the Profile's statement, found by its Sid, from the role's
// trust policy; no other statement is touched. The wildcard form's statement
// serves every Profile and stays.
// When others is not nil, the statements of someone else's that still trust
// the Profile's service accounts are added to it (see trustpolicy.Others).
func (p Plugin) untrust(ctx context.Context, req plugins.Request, cfg *Config, role string, others *[]string) (plugins.Change, error) {
	change := plugins.Change{Kind: "IAMRoleTrustPolicy", Name: role}
	edit := cfg.edit(plugins.Namespace(req.Profile))
	if edit.Wildcard {
		return change, nil
	}
	err := req.Outside.Call(ctx, System, func(ctx context.Context) error {
		defer lockRole(role)()
		doc, err := p.iam.TrustPolicy(ctx, role)
		if errors.Is(err, ErrNoRole) {
			return nil
		}
		if err != nil {
			return err
		}
		if edit.Provider == "" {
			if edit.Provider, err = trustpolicy.ProviderFromPolicy(doc); err != nil {
				// No provider statement, so none of our subjects either.
				return nil
			}
		}
		if others != nil {
			found, err := trustpolicy.Others(doc, edit)
			if err != nil {
				return fmt.Errorf("role %s: %w", role, err)
			}
			for _, f := range found {
				*others = append(*others, "role "+role+": "+f)
			}
		}
		out, changed, err := trustpolicy.RemoveStatement(doc, edit)
		if err != nil {
			return fmt.Errorf("role %s: %w", role, err)
		}
		if !changed {
			return nil
		}
		if err := p.iam.SetTrustPolicy(ctx, role, out); err != nil {
			return err
		}
		change.Action = plugins.Deleted
		return nil
	})
	return change, err
}
