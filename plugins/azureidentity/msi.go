package azureidentity

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/msi/armmsi"

	"github.com/profilekit/profilekit/plugins/outside"
)

//go:generate mockgen -typed -source=msi.go -destination=iammock/msi.go -package=iammock

// Credential is a federated identity credential of a managed identity: a
// token of Issuer for Subject with one of Audiences may act as the identity.
type Credential struct {
	Issuer    string
	Subject   string
	Audiences []string
}

// Credentials is the part of the Azure managed identity API the plugin
// calls: federated identity credentials, by identity and name, read, put and
// deleted.
type Credentials interface {
	// Get returns the named credential, and false when it does not exist.
	Get(ctx context.Context, id IdentityRef, name string) (Credential, bool, error)
	// Put creates or replaces the named credential.
	Put(ctx context.Context, id IdentityRef, name string, c Credential) error
	// Delete deletes the named credential; one that does not exist is done.
	Delete(ctx context.Context, id IdentityRef, name string) error
	// Tags returns the identity's resource tags, or ErrNoIdentity when it
	// does not exist.
	Tags(ctx context.Context, id IdentityRef) (map[string]string, error)
}

// ErrNoIdentity is a managed identity that does not exist.
var ErrNoIdentity = errors.New("the managed identity does not exist")

// NewCredentials returns the Credentials of the Azure SDK, authenticated by
// cred (such as azidentity.NewDefaultAzureCredential, which takes workload
// identity, managed identity or the environment). A client per subscription
// is made on first use.
func NewCredentials(cred azcore.TokenCredential, opts ...Option) Credentials {
	s := &sdkCredentials{cred: cred}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Option configures the Credentials of NewCredentials.
type Option func(*sdkCredentials)

// WithClientOptions sets the options of the SDK's clients: another cloud
// (Azure Government, Azure China, or a local server's endpoint), retries, a
// transport.
func WithClientOptions(o *arm.ClientOptions) Option {
	return func(s *sdkCredentials) { s.opts = o }
}

type sdkCredentials struct {
	cred azcore.TokenCredential
	opts *arm.ClientOptions
}

func (s *sdkCredentials) client(sub string) (*armmsi.FederatedIdentityCredentialsClient, error) {
	// The client holds no connection of its own; making one per call is cheap.
	return armmsi.NewFederatedIdentityCredentialsClient(sub, s.cred, s.opts)
}

func notFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

func (s *sdkCredentials) Get(ctx context.Context, id IdentityRef, name string) (Credential, bool, error) {
	c, err := s.client(id.Subscription)
	if err != nil {
		return Credential{}, false, err
	}
	resp, err := c.Get(ctx, id.ResourceGroup, id.Name, name, nil)
	if notFound(err) {
		return Credential{}, false, nil
	}
	if err != nil {
		return Credential{}, false, err
	}
	var out Credential
	if p := resp.Properties; p != nil {
		out = Credential{Issuer: deref(p.Issuer), Subject: deref(p.Subject)}
		for _, a := range p.Audiences {
			out.Audiences = append(out.Audiences, deref(a))
		}
	}
	return out, true, nil
}

func (s *sdkCredentials) Put(ctx context.Context, id IdentityRef, name string, cr Credential) error {
	c, err := s.client(id.Subscription)
	if err != nil {
		return err
	}
	_, err = c.CreateOrUpdate(ctx, id.ResourceGroup, id.Name, name, armmsi.FederatedIdentityCredential{
		Properties: &armmsi.FederatedIdentityCredentialProperties{
			Issuer:    to.Ptr(cr.Issuer),
			Subject:   to.Ptr(cr.Subject),
			Audiences: to.SliceOfPtrs(cr.Audiences...),
		},
	}, nil)
	return err
}

func (s *sdkCredentials) Delete(ctx context.Context, id IdentityRef, name string) error {
	c, err := s.client(id.Subscription)
	if err != nil {
		return err
	}
	_, err = c.Delete(ctx, id.ResourceGroup, id.Name, name, nil)
	if notFound(err) {
		return nil
	}
	return err
}

func (s *sdkCredentials) Tags(ctx context.Context, id IdentityRef) (map[string]string, error) {
	c, err := armmsi.NewUserAssignedIdentitiesClient(id.Subscription, s.cred, s.opts)
	if err != nil {
		return nil, err
	}
	resp, err := c.Get(ctx, id.ResourceGroup, id.Name, nil)
	if notFound(err) {
		return nil, fmt.Errorf("identity %s: %w", id.Name, ErrNoIdentity)
	}
	if err != nil {
		return nil, err
	}
	tags := make(map[string]string, len(resp.Tags))
	for k, v := range resp.Tags {
		tags[k] = deref(v)
	}
	return tags, nil
}

// DefaultCredentials returns the Credentials of the Azure SDK with the
// default credential chain, made on first use so that a host that never
// serves this plugin needs no Azure configuration.
func DefaultCredentials() Credentials {
	return lazyCredentials{outside.NewLazy(func(context.Context) (Credentials, error) {
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("Azure credential: %w", err)
		}
		return NewCredentials(cred), nil
	})}
}

type lazyCredentials struct{ c *outside.Lazy[Credentials] }

func (l lazyCredentials) Get(ctx context.Context, id IdentityRef, name string) (Credential, bool, error) {
	c, err := l.c.Get(ctx)
	if err != nil {
		return Credential{}, false, err
	}
	return c.Get(ctx, id, name)
}

func (l lazyCredentials) Put(ctx context.Context, id IdentityRef, name string, cr Credential) error {
	c, err := l.c.Get(ctx)
	if err != nil {
		return err
	}
	return c.Put(ctx, id, name, cr)
}

func (l lazyCredentials) Delete(ctx context.Context, id IdentityRef, name string) error {
	c, err := l.c.Get(ctx)
	if err != nil {
		return err
	}
	return c.Delete(ctx, id, name)
}

func (l lazyCredentials) Tags(ctx context.Context, id IdentityRef) (map[string]string, error) {
	c, err := l.c.Get(ctx)
	if err != nil {
		return nil, err
	}
	return c.Tags(ctx, id)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
