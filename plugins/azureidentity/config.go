package azureidentity

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"

	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "AzureWorkloadIdentity"

// The annotations Azure workload identity's webhook reads.
const (
	AnnotationClientID = "azure.workload.identity/client-id"
	AnnotationTenantID = "azure.workload.identity/tenant-id"
)

// DefaultAudience is the audience Microsoft Entra ID takes tokens of
// federated credentials for.
const DefaultAudience = "api://AzureADTokenExchange"

// DefaultServiceAccount is the upstream controller's workload service account.
const DefaultServiceAccount = "default-editor"

// Config is the plugin's configuration. A Profile names its user-assigned
// managed identity; the cluster's issuer and the rest are the host's.
type Config struct {
	// Identity is the resource ID of the user-assigned managed identity:
	// /subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>.
	Identity string `json:"identity,omitempty"`
	// ClientID is the identity's client ID, which the service accounts are
	// annotated with.
	ClientID string `json:"clientId,omitempty"`
	// AnnotateOnly only annotates the service accounts and leaves the
	// federated credentials to someone else.
	AnnotateOnly bool `json:"annotateOnly,omitempty"`
	// ServiceAccounts are the Profile's service accounts to annotate and
	// federate. Default [default-editor].
	ServiceAccounts []string `json:"serviceAccounts,omitempty" profilekit:"hostonly"`
	// Issuer is the cluster's OIDC issuer URL (az aks show --query
	// oidcIssuerProfile.issuerUrl). Required unless annotateOnly.
	Issuer string `json:"issuer,omitempty" profilekit:"hostonly"`
	// TenantID, when set, is annotated too, for identities of another tenant
	// than the webhook's default.
	TenantID string `json:"tenantId,omitempty" profilekit:"hostonly"`
	// Audience of the federated credentials. Default api://AzureADTokenExchange.
	Audience string `json:"audience,omitempty" profilekit:"hostonly"`
	// AllowedIdentities are the managed identities Profiles may use, by
	// resource ID (or, for a Profile that names none, annotateOnly, by
	// client ID), such as
	// /subscriptions/<id>/resourceGroups/kubeflow/providers/Microsoft.ManagedIdentity/userAssignedIdentities/kf-{{ .Namespace }}.
	// One no allowance gives the Profile is refused (IdentityNotAllowed),
	// and so is every one while the list is empty; one that already serves
	// another Profile is a Conflict unless its allowance is shared.
	AllowedIdentities identities.Policy `json:"allowedIdentities,omitempty" profilekit:"hostonly"`
}

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{ServiceAccounts: []string{DefaultServiceAccount}, Audience: DefaultAudience}
}

var (
	guid       = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	identityID = regexp.MustCompile(`(?i)^/subscriptions/([0-9a-f-]{36})/resourceGroups/([\w.()-]{1,90})/providers/Microsoft\.ManagedIdentity/userAssignedIdentities/([\w-]{3,128})$`)
)

// IdentityRef is a user-assigned managed identity.
type IdentityRef struct {
	Subscription, ResourceGroup, Name string
}

// ParseIdentity parses a managed identity's resource ID.
func ParseIdentity(id string) (IdentityRef, error) {
	m := identityID.FindStringSubmatch(id)
	if m == nil {
		return IdentityRef{}, fmt.Errorf("identity %q: not a user-assigned managed identity resource ID (/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>)", id)
	}
	return IdentityRef{Subscription: m[1], ResourceGroup: m[2], Name: m[3]}, nil
}

// Validate checks the identity, client and tenant IDs (when set), the
// service account names and the issuer. A Profile without clientId, or
// without identity unless annotateOnly, is reported when the plugin applies.
func (c *Config) Validate() error {
	var errs []error
	if c.Identity != "" {
		if _, err := ParseIdentity(c.Identity); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ClientID != "" && !guid.MatchString(c.ClientID) {
		errs = append(errs, fmt.Errorf("clientId %q: not a GUID", c.ClientID))
	}
	if c.TenantID != "" && !guid.MatchString(c.TenantID) {
		errs = append(errs, fmt.Errorf("tenantId %q: not a GUID", c.TenantID))
	}
	if err := serviceaccounts.Check(c.ServiceAccounts); err != nil {
		errs = append(errs, err)
	}
	if c.Issuer != "" {
		if u, err := url.Parse(c.Issuer); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("issuer %q: want an https URL", c.Issuer))
		}
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("audience: must not be empty"))
	}
	if err := c.AllowedIdentities.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
