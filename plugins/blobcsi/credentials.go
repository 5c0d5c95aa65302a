package blobcsi

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"

	"github.com/profilekit/profilekit/plugins"
)

// CredentialType says how profilekit authenticates to a storage account to
// create and delete containers.
type CredentialType string

// The ways a cluster authenticates to Azure Storage.
const (
	// AccountKey signs requests with the account's shared key, read from
	// the instance's Secret (the default).
	AccountKey CredentialType = "AccountKey"
	// ServicePrincipal asks Microsoft Entra ID for a token with one of the
	// config's principals: its client ID and tenant, and the client secret
	// in its Secret.
	ServicePrincipal CredentialType = "ServicePrincipal"
	// WorkloadIdentity asks Microsoft Entra ID for a token with the host's
	// own federated identity: the service account token the cluster
	// projects into the host's pod.
	WorkloadIdentity CredentialType = "WorkloadIdentity"
)

// SecretSPNClientSecret is the key of a principal's Secret that holds its
// client secret, as the blob CSI driver reads it too.
const SecretSPNClientSecret = "azurestoragespnclientsecret"

// DefaultAADEndpoint is the Microsoft Entra ID authority of Azure's public
// cloud.
const DefaultAADEndpoint = "https://login.microsoftonline.com/"

// The blob CSI driver's volume attributes for service principal mounts, as
// its documentation names them (the driver reads them case-insensitively).
const (
	AttrAuthType    = "AzureStorageAuthType"
	AttrSPNClientID = "AzureStorageSPNClientID"
	AttrSPNTenantID = "AzureStorageSPNTenantID"
	AttrAADEndpoint = "AzureStorageAADEndpoint"
	// AuthTypeSPN is the value of AttrAuthType for a service principal.
	AuthTypeSPN = "spn"
)

// Principal is a service principal that mounts volumes (the driver
// authenticates blobfuse with it) and may create containers.
type Principal struct {
	// ClientID is the principal's application (client) ID.
	ClientID string `json:"clientID"`
	// TenantID is its Microsoft Entra tenant.
	TenantID string `json:"tenantID"`
	// Secret holds its client secret under azurestoragespnclientsecret;
	// the driver reads it as the volume's node-stage Secret.
	Secret SecretRef `json:"secret"`
	// AADEndpoint is the authority host. Default
	// https://login.microsoftonline.com/.
	AADEndpoint string `json:"aadEndpoint,omitempty"`
}

// SecretRef locates a Secret.
type SecretRef struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// WorkloadIdentityCredentials are the host's federated identity. Every
// field may be left empty to take the value the workload identity webhook
// puts in the host's environment (AZURE_CLIENT_ID, AZURE_TENANT_ID,
// AZURE_FEDERATED_TOKEN_FILE, AZURE_AUTHORITY_HOST).
type WorkloadIdentityCredentials struct {
	ClientID      string `json:"clientID,omitempty"`
	TenantID      string `json:"tenantID,omitempty"`
	TokenFile     string `json:"tokenFile,omitempty"`
	AuthorityHost string `json:"authorityHost,omitempty"`
}

// Credentials say how profilekit reaches an instance's account (to create
// containers) and which Secret the driver mounts the instance's own volumes
// with. Shared buckets whose grant names a principal mount with that
// principal instead.
type Credentials struct {
	// Type is AccountKey (default), ServicePrincipal or WorkloadIdentity.
	Type CredentialType `json:"type,omitempty"`
	// SecretName and SecretNamespace locate a Secret with the account's
	// name and key (azurestorageaccountname, azurestorageaccountkey). The
	// driver mounts the instance's own volumes with it; AccountKey creates
	// containers with it. Required unless Principal is set.
	SecretName      string `json:"secretName,omitempty"`
	SecretNamespace string `json:"secretNamespace,omitempty"`
	// Principal names one of the config's principals. ServicePrincipal
	// creates containers with it, and when SecretName is empty the
	// instance's own volumes mount with it.
	Principal string `json:"principal,omitempty"`
	// WorkloadIdentity is the host's identity for type WorkloadIdentity.
	WorkloadIdentity *WorkloadIdentityCredentials `json:"workloadIdentity,omitempty"`
}

func (c Credentials) typ() CredentialType {
	if c.Type == "" {
		return AccountKey
	}
	return c.Type
}

// validate checks the instance's credentials against the config's
// principals.
func (c Credentials) validate(principals map[string]Principal) error {
	var errs []error
	if (c.SecretName == "") != (c.SecretNamespace == "") {
		errs = append(errs, fmt.Errorf("want both secretName and secretNamespace, or neither"))
	}
	if c.Principal != "" {
		if _, ok := principals[c.Principal]; !ok {
			errs = append(errs, fmt.Errorf("principal %q: not among principals (%s)", c.Principal, strings.Join(slices.Sorted(maps.Keys(principals)), ", ")))
		}
	}
	if c.SecretName == "" && c.Principal == "" {
		errs = append(errs, fmt.Errorf("want secretName and secretNamespace, or a principal, to mount the instance's volumes with"))
	}
	switch c.typ() {
	case AccountKey:
		if c.SecretName == "" {
			errs = append(errs, fmt.Errorf("type AccountKey: want the account key's secretName and secretNamespace"))
		}
	case ServicePrincipal:
		if c.Principal == "" {
			errs = append(errs, fmt.Errorf("type ServicePrincipal: want a principal"))
		}
	case WorkloadIdentity:
		if wi := c.WorkloadIdentity; wi != nil && wi.AuthorityHost != "" {
			if err := validAuthority(wi.AuthorityHost); err != nil {
				errs = append(errs, fmt.Errorf("workloadIdentity.authorityHost: %w", err))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("type %q: want AccountKey, ServicePrincipal or WorkloadIdentity", c.Type))
	}
	if c.WorkloadIdentity != nil && c.typ() != WorkloadIdentity {
		errs = append(errs, fmt.Errorf("workloadIdentity is set but type is %s", c.typ()))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return nil
}

func (p Principal) validate() error {
	var errs []error
	if p.ClientID == "" {
		errs = append(errs, fmt.Errorf("want clientID"))
	}
	if p.TenantID == "" {
		errs = append(errs, fmt.Errorf("want tenantID"))
	}
	if p.Secret.Name == "" || p.Secret.Namespace == "" {
		errs = append(errs, fmt.Errorf("secret: want name and namespace"))
	}
	if p.AADEndpoint != "" {
		if err := validAuthority(p.AADEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("aadEndpoint: %w", err))
		}
	}
	return errors.Join(errs...)
}

// validAuthority accepts an https URL with a host: the SDK sends secrets
// and assertions only over TLS.
func validAuthority(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q: want https://host/", s)
	}
	return nil
}

// aadEndpoint returns the principal's authority host.
func (p Principal) aadEndpoint() string {
	if p.AADEndpoint == "" {
		return DefaultAADEndpoint
	}
	return p.AADEndpoint
}

// knownAuthority says whether an authority host is one of Azure's clouds;
// any other (a private cloud, a sovereign one the SDK does not know)
// cannot be checked by instance discovery, which asks the public cloud.
func knownAuthority(host string) bool {
	for _, c := range []cloud.Configuration{cloud.AzurePublic, cloud.AzureGovernment, cloud.AzureChina} {
		if strings.TrimSuffix(c.ActiveDirectoryAuthorityHost, "/") == strings.TrimSuffix(host, "/") {
			return true
		}
	}
	return false
}

// Mount is how the driver mounts a volume: the node-stage Secret and, for a
// service principal, the principal's attributes.
type Mount struct {
	// Secret is the node-stage Secret.
	Secret SecretRef
	// Principal names the service principal, empty for an account key.
	Principal string
	// ClientID, TenantID and AADEndpoint are the principal's.
	ClientID, TenantID, AADEndpoint string
}

// MountFor returns how v is mounted: with the principal its grant names;
// else, for an instance's own volume or a bucket whose grant names none,
// with the instance's account-key Secret, or its principal when it has no
// such Secret. A principal the config does not have is a terminal
// InvalidConfig error that names the volume.
func (c *Config) MountFor(v Volume) (Mount, error) {
	name := v.Principal
	if name == "" {
		if v.Instance.Credentials.SecretName != "" {
			return Mount{Secret: SecretRef{Name: v.Instance.Credentials.SecretName, Namespace: v.Instance.Credentials.SecretNamespace}}, nil
		}
		name = v.Instance.Credentials.Principal
	}
	p, ok := c.Principals[name]
	if !ok {
		return Mount{}, plugins.Terminalf(ReasonUnknownPrincipal, "volume %s: %s names the service principal %q, which the host's principals do not have (%s); the volume is not written, and an existing one is kept",
			v.Claim, volumeID(v), name, strings.Join(slices.Sorted(maps.Keys(c.Principals)), ", "))
	}
	return Mount{Secret: p.Secret, Principal: name, ClientID: p.ClientID, TenantID: p.TenantID, AADEndpoint: p.aadEndpoint()}, nil
}

// attributes returns the driver's volume attributes for the mount.
func (m Mount) attributes() map[string]string {
	if m.Principal == "" {
		return nil
	}
	return map[string]string{AttrAuthType: AuthTypeSPN, AttrSPNClientID: m.ClientID, AttrSPNTenantID: m.TenantID, AttrAADEndpoint: m.AADEndpoint}
}
