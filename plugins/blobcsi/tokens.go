package blobcsi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// token returns the Microsoft Entra ID credential of an instance: its
// service principal, with the client secret from the principal's Secret,
// or the host's workload identity.
func (c containers) token(ctx context.Context, in Instance) (azcore.TokenCredential, error) {
	switch in.Credentials.typ() {
	case ServicePrincipal:
		p, ok := c.principals[in.Credentials.Principal]
		if !ok {
			return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "instance %s: principal %q is not among the host's principals", in.Name, in.Credentials.Principal)
		}
		var s corev1.Secret
		key := client.ObjectKey{Namespace: p.Secret.Namespace, Name: p.Secret.Name}
		if err := c.reader.Get(ctx, key, &s); err != nil {
			return nil, fmt.Errorf("read the Secret %s of principal %s: %w", key, in.Credentials.Principal, err)
		}
		secret := string(s.Data[SecretSPNClientSecret])
		if secret == "" {
			return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "the Secret %s of principal %s has no %s", key, in.Credentials.Principal, SecretSPNClientSecret)
		}
		return c.tokens.get([]string{string(ServicePrincipal), p.TenantID, p.ClientID, p.aadEndpoint(), secret}, func() (azcore.TokenCredential, error) {
			o := c.clientOptions()
			o.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: p.aadEndpoint()}
			cred, err := azidentity.NewClientSecretCredential(p.TenantID, p.ClientID, secret, &azidentity.ClientSecretCredentialOptions{
				ClientOptions: o, DisableInstanceDiscovery: !knownAuthority(p.aadEndpoint())})
			if err != nil {
				// The SDK checks the tenant's form; the message names no secret.
				return nil, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("principal %s: %w", in.Credentials.Principal, err))
			}
			return cred, nil
		})
	case WorkloadIdentity:
		wi := WorkloadIdentityCredentials{}
		if in.Credentials.WorkloadIdentity != nil {
			wi = *in.Credentials.WorkloadIdentity
		}
		host := wi.AuthorityHost
		if host == "" {
			host = os.Getenv("AZURE_AUTHORITY_HOST")
		}
		// The token file is read again for every token: the kubelet
		// rotates it.
		return c.tokens.get([]string{string(WorkloadIdentity), wi.TenantID, wi.ClientID, host, wi.TokenFile}, func() (azcore.TokenCredential, error) {
			o := c.clientOptions()
			if host != "" {
				o.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: host}
			}
			cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
				ClientOptions: o, ClientID: wi.ClientID, TenantID: wi.TenantID, TokenFilePath: wi.TokenFile,
				DisableInstanceDiscovery: host != "" && !knownAuthority(host)})
			if err != nil {
				return nil, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("workload identity of instance %s: %w", in.Name, err))
			}
			return cred, nil
		})
	}
	return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "instance %s: credentials type %q", in.Name, in.Credentials.Type)
}

// tokenCache keeps one token credential per identity, so that a token is
// asked for once per lifetime rather than once per container. Its keys are
// digests of everything that makes the credential (a rotated secret is a
// new key), never the values themselves.
type tokenCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]azcore.TokenCredential
}

// maxTokenCredentials bounds the cache; rotated secrets leave old keys.
const maxTokenCredentials = 64

// get returns the credential made for key, making it with mk once. A nil
// cache makes a new one every time.
func (t *tokenCache) get(key []string, mk func() (azcore.TokenCredential, error)) (azcore.TokenCredential, error) {
	if t == nil {
		return mk()
	}
	k := sha256.Sum256([]byte(strings.Join(key, "\x00")))
	t.mu.Lock()
	defer t.mu.Unlock()
	if cred, ok := t.m[k]; ok {
		return cred, nil
	}
	cred, err := mk()
	if err != nil {
		return nil, err
	}
	if t.m == nil || len(t.m) >= maxTokenCredentials {
		t.m = map[[sha256.Size]byte]azcore.TokenCredential{}
	}
	t.m[k] = cred
	return cred, nil
}
