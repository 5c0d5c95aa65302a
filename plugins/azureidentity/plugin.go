package azureidentity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/profilekit/profilekit/plugins"
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
type Plugin struct {
	creds Credentials
}

var _ plugins.Plugin = Plugin{}

// Definition returns the plugin, which calls Azure through c.
func Definition(c Credentials) plugins.Definition {
	return plugins.Definition{
		Plugin:       Plugin{creds: c},
		NewConfig:    func() any { return NewConfig() },
		OutsideState: true,
		Watches:      []plugins.Watch{serviceaccounts.Watch()},
	}
}

// Kind returns "AzureWorkloadIdentity".
func (Plugin) Kind() string { return Kind }

// CredentialName is the name of the federated credential of one service
// account: profilekit-<namespace>-<name>, within Azure's 120 characters.
func CredentialName(namespace, name string) string {
	n := strings.ReplaceAll("profilekit-"+namespace+"-"+name, ".", "-")
	if len(n) > 120 {
		n = n[:120]
	}
	return n
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

// Apply annotates the service accounts and, unless annotateOnly, puts a
// federated credential per service account on the identity (only when that
// is not what was last made true). Credentials of ours that are no longer
// wanted are deleted.
func (p Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	if cfg.ClientID == "" {
		return plugins.Result{}, plugins.Terminalf(plugins.ReasonInvalidSpec, "plugin %s: clientId: required", Kind)
	}
	want := map[string]string{AnnotationClientID: cfg.ClientID}
	if cfg.TenantID != "" {
		want[AnnotationTenantID] = cfg.TenantID
	}
	res, annErr := serviceaccounts.Annotate(ctx, req, cfg.ServiceAccounts, want)
	if cfg.AnnotateOnly {
		return res, annErr
	}
	switch {
	case cfg.Identity == "":
		return res, errors.Join(annErr, plugins.Terminalf(plugins.ReasonInvalidSpec, "plugin %s: identity: required unless annotateOnly", Kind))
	case cfg.Issuer == "":
		return res, errors.Join(annErr, plugins.Terminalf(plugins.ReasonInvalidConfig, "plugin %s: issuer: the cluster's OIDC issuer must be set in the host configuration", Kind))
	}
	creds, err := cfg.credentials(plugins.Namespace(req.Profile))
	if err != nil {
		return res, errors.Join(annErr, plugins.Terminal(plugins.ReasonInvalidSpec, err))
	}
	errs := []error{annErr}
	keep := make([]string, 0, len(creds))
	for _, c := range creds {
		keep = append(keep, c.key)
		change := plugins.Change{Kind: "FederatedIdentityCredential", Namespace: c.id.Name, Name: c.name, Action: plugins.Unchanged}
		desired := struct {
			Identity   IdentityRef
			Name       string
			Credential Credential
		}{c.id, c.name, c.cred}
		called, err := req.Outside.Ensure(ctx, System, c.key, desired, func(ctx context.Context) error {
			return p.creds.Put(ctx, c.id, c.name, c.cred)
		})
		if called && err == nil {
			change.Action = plugins.Configured
		}
		res.Add(change)
		errs = append(errs, err)
	}
	stale, err := p.deleteAll(ctx, req, keep)
	res.Merge(stale)
	return res, errors.Join(append(errs, err)...)
}

// Revoke removes our annotations and deletes our federated credentials, and
// no other credential of the identity.
func (p Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	res, annErr := serviceaccounts.Unannotate(ctx, req, cfg.ServiceAccounts, AnnotationClientID, AnnotationTenantID)
	removed, err := p.deleteAll(ctx, req, nil)
	res.Merge(removed)
	return res, errors.Join(annErr, err)
}

// deleteAll deletes each credential recorded as made, except those in keep,
// and forgets it.
func (p Plugin) deleteAll(ctx context.Context, req plugins.Request, keep []string) (plugins.Result, error) {
	var res plugins.Result
	keys, err := req.Outside.Recorded(ctx)
	if err != nil {
		return res, err
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		id, name, ok := parseKey(k)
		if !ok || slices.Contains(keep, k) {
			continue
		}
		err := req.Outside.Call(ctx, System, func(ctx context.Context) error { return p.creds.Delete(ctx, id, name) })
		if err != nil {
			errs = append(errs, fmt.Errorf("delete federated credential %s of %s: %w", name, id.Name, err))
			continue
		}
		res.Add(plugins.Change{Kind: "FederatedIdentityCredential", Namespace: id.Name, Name: name, Action: plugins.Deleted})
		errs = append(errs, req.Outside.Forget(ctx, k))
	}
	return res, errors.Join(errs...)
}
