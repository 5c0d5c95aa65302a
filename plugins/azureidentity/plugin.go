package azureidentity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
)

// System names the Azure managed identity API in outside-call metrics and
// condition reasons.
const System = "AzureIdentity"

// keyPrefix starts the outside-state key of a federated credential:
// credential/<subscription>/<resource group>/<identity>/<credential>.
const keyPrefix = "credential/"

// Plugin annotates the Profile's service accounts with a managed identity's
// client ID and federates them with the identity.
// Its Apply and Revoke
// are those of every cloud identity plugin (see the package doc).
type Plugin struct {
	serviceaccounts.Identity[Config]
	creds Credentials
}

var _ plugins.Plugin = Plugin{}

// Definition returns the plugin, which calls Azure through c.
func Definition(c Credentials) plugins.Definition {
	p := Plugin{creds: c}
	p.Identity = serviceaccounts.Identity[Config]{KindName: Kind, Ask: ask, Grant: p.grant, Sweep: p.sweep}
	return serviceaccounts.IdentityDefinition(p, NewConfig)
}

type credential struct {
	key  string
	id   IdentityRef
	name string
	cred Credential
}

func (c *Config) credentials(namespace string) ([]credential, error) {
	id, err := ParseIdentity(c.Identity)
	if err != nil {
		return nil, err
	}
	out := make([]credential, 0, len(c.ServiceAccounts))
	for _, sa := range c.ServiceAccounts {
		name := CredentialName(namespace, sa)
		out = append(out, credential{
			key:  keyPrefix + strings.Join([]string{id.Subscription, id.ResourceGroup, id.Name, name}, "/"),
			id:   id,
			name: name,
			cred: Credential{Issuer: c.Issuer, Subject: serviceaccounts.Subject(namespace, sa), Audiences: []string{c.Audience}},
		})
	}
	return out, nil
}

func parseKey(k string) (IdentityRef, string, bool) {
	rest, ok := strings.CutPrefix(k, keyPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 4 {
		return IdentityRef{}, "", false
	}
	return IdentityRef{Subscription: parts[0], ResourceGroup: parts[1], Name: parts[2]}, parts[3], true
}

// annotations are what the service accounts get.
func (c *Config) annotations() map[string]string {
	want := map[string]string{AnnotationClientID: c.ClientID}
	if c.TenantID != "" {
		want[AnnotationTenantID] = c.TenantID
	}
	return want
}

// ask is what a pass under cfg asks for: the policy matches the identity,
// or the client ID where the Profile names no identity (annotateOnly).
func ask(cfg *Config, _ *kubeflowv1.Profile) (serviceaccounts.Ask, error) {
	a := serviceaccounts.Ask{
		Identity:        cmp.Or(cfg.Identity, cfg.ClientID),
		Policy:          cfg.AllowedIdentities,
		ServiceAccounts: cfg.ServiceAccounts,
		Annotations:     cfg.annotations(),
		Keys:            []string{AnnotationClientID, AnnotationTenantID},
		AnnotateOnly:    cfg.AnnotateOnly,
	}
	if cfg.ClientID == "" {
		return a, plugins.Terminalf(plugins.ReasonInvalidSpec, "plugin %s: clientId: required", Kind)
	}
	return a, nil
}

// grant annotates the service accounts and puts a federated credential per
// service account on the identity. Azure takes one credential per issuer
// and subject, so the annotation comes first and the credentials no longer
// wanted go before the new ones are put.
func (p Plugin) grant(ctx context.Context, req plugins.Request, cfg *Config, allowance identities.Allowance) (plugins.Result, error) {
	res, annErr := serviceaccounts.Annotate(ctx, req, cfg.ServiceAccounts, cfg.annotations())
	switch {
	case cfg.Identity == "":
		return res, errors.Join(annErr, plugins.Terminalf(plugins.ReasonInvalidSpec, "plugin %s: identity: required unless annotateOnly", Kind))
	case cfg.Issuer == "":
		return res, errors.Join(annErr, plugins.Terminalf(plugins.ReasonInvalidConfig, "plugin %s: issuer: the cluster's OIDC issuer must be set in the host configuration", Kind))
	}
	ns := plugins.Namespace(req.Profile)
	creds, err := cfg.credentials(ns)
	if err != nil {
		return res, errors.Join(annErr, plugins.Terminal(plugins.ReasonInvalidSpec, err))
	}
	errs := []error{annErr}
	keep := make([]string, 0, len(creds))
	for _, c := range creds {
		keep = append(keep, c.key)
	}
	// Credentials no longer wanted go first: Azure takes one credential per
	// issuer and subject, and one of an older name may hold ours.
	stale, err := p.deleteAll(ctx, req, keep, nil)
	res.Merge(stale)
	errs = append(errs, err)
	// The credentials the record proves we made; one recorded ahead of its
	// put proves nothing (see deleteAll).
	made, err := req.Outside.Made(ctx)
	if err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	for _, c := range creds {
		change := plugins.Change{Kind: "FederatedIdentityCredential", Namespace: c.id.Name, Name: c.name, Action: plugins.Unchanged}
		desired := struct {
			Identity   IdentityRef
			Name       string
			Credential Credential
		}{c.id, c.name, c.cred}
		piece := keyPrefix + strings.Join([]string{c.id.Subscription, c.id.ResourceGroup, c.id.Name}, "/")
		held := func(holder string) error {
			return plugins.Terminalf(plugins.ReasonConflict,
				"identity %s already serves Profile %s; an identity serves one Profile unless the host's allowance marks it shared", c.id.Name, holder)
		}
		if !allowance.Shared {
			if err := serviceaccounts.HeldOffline(ctx, req, piece, held); err != nil {
				res.Add(change)
				errs = append(errs, err)
				continue
			}
		}
		// Recorded ahead: a credential put and never recorded would let the
		// service account act as the identity after the Profile let it go.
		_, err := req.Outside.EnsureAhead(ctx, System, c.key, desired, func(ctx context.Context) error {
			if allowance.NeedsTag() {
				tags, err := p.creds.Tags(ctx, c.id)
				if errors.Is(err, ErrNoIdentity) {
					return plugins.Terminalf(plugins.ReasonInvalidSpec, "identity %s: %v", c.id.Name, err)
				}
				if err != nil {
					return fmt.Errorf("read the tags of identity %s: %w", c.id.Name, err)
				}
				if err := allowance.CheckTag(req.Profile, cfg.Identity, tags); err != nil {
					return err
				}
			}
			if !allowance.Shared {
				holder, err := req.Outside.Claim(ctx, piece)
				if err != nil {
					return err
				}
				if holder != "" {
					return held(holder)
				}
			}
			action, err := p.put(ctx, c, slices.Contains(made, c.key))
			change.Action = action
			return err
		})
		res.Add(change)
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// put makes the credential c, unless one of its name that is not ours for
// this Profile is there: a Conflict, and nothing is touched. One of its name
// is ours when its issuer, subject and audiences are exactly c's, or when
// the record holds it (we made it) and its subject is still c's.
func (p Plugin) put(ctx context.Context, c credential, recorded bool) (plugins.Action, error) {
	live, found, err := p.creds.Get(ctx, c.id, c.name)
	if err != nil {
		return plugins.Unchanged, fmt.Errorf("read federated credential %s of %s: %w", c.name, c.id.Name, err)
	}
	switch {
	case found && live.equal(c.cred):
		return plugins.Unchanged, nil
	case found && !(recorded && live.Subject == c.cred.Subject):
		return plugins.Skipped, plugins.Terminalf(plugins.ReasonConflict,
			"federated credential %s of identity %s exists with issuer %q, subject %q and audiences %q, and is not this Profile's; left untouched",
			c.name, c.id.Name, live.Issuer, live.Subject, live.Audiences)
	}
	if err := p.creds.Put(ctx, c.id, c.name, c.cred); err != nil {
		return plugins.Unchanged, fmt.Errorf("put federated credential %s of %s: %w", c.name, c.id.Name, err)
	}
	if found {
		return plugins.Configured, nil
	}
	return plugins.Created, nil
}

func (c Credential) equal(o Credential) bool {
	return c.Issuer == o.Issuer && c.Subject == o.Subject && slices.Equal(c.Audiences, o.Audiences)
}

// sweep deletes the credentials the record holds. Failing closed, the
// credentials on each identity in named are recorded as intended first,
// so that one of our name there is deleted too, and only when it is
// exactly what the plugin puts for this namespace.
func (p Plugin) sweep(ctx context.Context, req plugins.Request, cfg *Config, named []string, others *[]string) (plugins.Result, error) {
	if cfg.Issuer != "" && !cfg.AnnotateOnly {
		var keys []string
		for _, identity := range named {
			withIdentity := *cfg
			withIdentity.Identity = identity
			creds, err := withIdentity.credentials(plugins.Namespace(req.Profile))
			if err != nil {
				continue // not an identity we could have put a credential on
			}
			for _, c := range creds {
				keys = append(keys, c.key)
			}
		}
		if len(keys) > 0 {
			if err := req.Outside.Intend(ctx, keys...); err != nil {
				return plugins.Result{}, err
			}
		}
	}
	return p.deleteAll(ctx, req, nil, others)
}

// deleteAll deletes each credential recorded, except those in keep, and
// forgets it. One that someone replaced with a credential of another
// subject is left as it is, and forgotten. One recorded ahead of its put
// and never recorded as made may be someone else's of the same name: it
// is deleted only when it is exactly what the plugin puts. When others is
// not nil, a credential left that trusts a service account of the
// Profile's namespace is described there.
func (p Plugin) deleteAll(ctx context.Context, req plugins.Request, keep []string, others *[]string) (plugins.Result, error) {
	var res plugins.Result
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return res, err
	}
	made, err := req.Outside.Made(ctx)
	if err != nil {
		return res, err
	}
	ns := plugins.Namespace(req.Profile)
	err = req.Outside.Sweep(ctx, func(k string) (string, bool) {
		_, _, ok := parseKey(k)
		return k, ok && !slices.Contains(keep, k)
	}, func(ctx context.Context, k string, _ []string) error {
		id, name, _ := parseKey(k)
		action := plugins.Deleted
		err := req.Outside.Call(ctx, System, func(ctx context.Context) error {
			live, found, err := p.creds.Get(ctx, id, name)
			switch {
			case err != nil:
				return err
			case !found:
				action = ""
				return nil
			case !ownedBy(name, live, ns),
				!slices.Contains(made, k) && !live.equal(Credential{Issuer: cfg.Issuer, Subject: live.Subject, Audiences: []string{cfg.Audience}}):
				action = plugins.Skipped
				if others != nil && strings.HasPrefix(live.Subject, serviceaccounts.Subject(ns, "")) {
					*others = append(*others, fmt.Sprintf("federated credential %s of identity %s (issuer %s) trusts %s", name, id.Name, live.Issuer, live.Subject))
				}
				return nil
			}
			return p.creds.Delete(ctx, id, name)
		})
		if err != nil {
			return fmt.Errorf("delete federated credential %s of %s: %w", name, id.Name, err)
		}
		if action != "" {
			res.Add(plugins.Change{Kind: "FederatedIdentityCredential", Namespace: id.Name, Name: name, Action: action})
		}
		return nil
	})
	return res, err
}

// ownedBy reports whether a credential of name that the record holds is
// still the one the plugin made for a service account of namespace: its
// subject is such a service account's, and name is that service account's
// credential name (or the name versions before CredentialName's scheme
// gave it).
func ownedBy(name string, live Credential, namespace string) bool {
	sa, ok := strings.CutPrefix(live.Subject, serviceaccounts.Subject(namespace, ""))
	if !ok || sa == "" {
		return false
	}
	return name == CredentialName(namespace, sa) || name == legacyCredentialName(namespace, sa)
}
