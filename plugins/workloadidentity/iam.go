package workloadidentity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"google.golang.org/api/googleapi"
	iam "google.golang.org/api/iam/v1"
	"google.golang.org/api/option"
)

//go:generate mockgen -typed -source=iam.go -destination=iammock/iam.go -package=iammock

// IAM is the part of the Google IAM API the plugin calls: the IAM policy of
// a service account, read and replaced with the etag it was read with.
type IAM interface {
	// Policy returns the IAM policy of the named resource
	// (projects/<project>/serviceAccounts/<email>).
	Policy(ctx context.Context, resource string) (*iam.Policy, error)
	// SetPolicy replaces the policy, which carries the etag of the policy it
	// was made from. A policy changed since that read is an error that
	// wraps ErrConcurrentChange.
	SetPolicy(ctx context.Context, resource string, p *iam.Policy) error
}

// ErrConcurrentChange is a policy that someone else changed between our read
// and our write; read it again and redo the change.
var ErrConcurrentChange = errors.New("the IAM policy changed since it was read")

// NewIAM returns the IAM of a Google API client, such as iam.NewService(ctx),
// which takes application default credentials (on GKE, the workload identity
// of the host's own service account).
func NewIAM(s *iam.Service) IAM { return apiIAM{s} }

type apiIAM struct{ s *iam.Service }

func (a apiIAM) Policy(ctx context.Context, resource string) (*iam.Policy, error) {
	// Version 3 returns conditional bindings as they are, so that a write
	// keeps them.
	return a.s.Projects.ServiceAccounts.GetIamPolicy(resource).OptionsRequestedPolicyVersion(3).Context(ctx).Do()
}

func (a apiIAM) SetPolicy(ctx context.Context, resource string, p *iam.Policy) error {
	_, err := a.s.Projects.ServiceAccounts.SetIamPolicy(resource, &iam.SetIamPolicyRequest{Policy: p}).Context(ctx).Do()
	var ge *googleapi.Error
	if errors.As(err, &ge) && (ge.Code == http.StatusConflict || ge.Code == http.StatusPreconditionFailed) {
		return fmt.Errorf("%s: %w", resource, ErrConcurrentChange)
	}
	return err
}

// DefaultIAM returns the IAM of a Google API client with application default
// credentials, made on first use so that a host that never serves this
// plugin needs no Google credentials.
func DefaultIAM() IAM {
	return &lazyIAM{}
}

type lazyIAM struct {
	mu sync.Mutex
	c  IAM
}

func (l *lazyIAM) get() (IAM, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		return l.c, nil
	}
	// The service outlives the call that makes it, so it must not take that
	// call's context.
	s, err := iam.NewService(context.Background(), option.WithScopes(iam.CloudPlatformScope))
	if err != nil {
		return nil, fmt.Errorf("Google IAM client: %w", err)
	}
	l.c = NewIAM(s)
	return l.c, nil
}

func (l *lazyIAM) Policy(ctx context.Context, resource string) (*iam.Policy, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.Policy(ctx, resource)
}

func (l *lazyIAM) SetPolicy(ctx context.Context, resource string, p *iam.Policy) error {
	c, err := l.get()
	if err != nil {
		return err
	}
	return c.SetPolicy(ctx, resource, p)
}
