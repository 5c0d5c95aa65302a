package workloadidentity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/api/googleapi"
	iam "google.golang.org/api/iam/v1"
	"google.golang.org/api/option"

	"github.com/profilekit/profilekit/plugins/outside"
)

//go:generate mockgen -typed -source=iam.go -destination=iammock/iam.go -package=iammock

// IAM is the part of the Google IAM API the plugin calls: the IAM policy of
// a service account, read and replaced with the etag it was read with.
type IAM interface {
	// Policy returns the IAM policy of the named resource
	// (projects/<project>/serviceAccounts/<email>).
	// An account that does not exist is an error that wraps ErrNoAccount.
	Policy(ctx context.Context, resource string) (*iam.Policy, error)
	// SetPolicy replaces the policy, which carries the etag of the policy it
	// was made from. A policy changed since that read is an error that
	// wraps ErrConcurrentChange.
	SetPolicy(ctx context.Context, resource string, p *iam.Policy) error
}

// ErrNoAccount is a Google service account that does not exist.
var ErrNoAccount = errors.New("the Google service account does not exist")

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
	pol, err := retryThrottled(ctx, func() (*iam.Policy, error) {
		return a.s.Projects.ServiceAccounts.GetIamPolicy(resource).OptionsRequestedPolicyVersion(3).Context(ctx).Do()
	})
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code == http.StatusNotFound {
		return nil, fmt.Errorf("%s: %w: %w", resource, ErrNoAccount, err)
	}
	return pol, err
}

func (a apiIAM) SetPolicy(ctx context.Context, resource string, p *iam.Policy) error {
	// A write made again after a lost answer carries the same etag, so it
	// cannot apply twice: it meets the conflict below instead.
	_, err := retryThrottled(ctx, func() (*iam.Policy, error) {
		return a.s.Projects.ServiceAccounts.SetIamPolicy(resource, &iam.SetIamPolicyRequest{Policy: p}).Context(ctx).Do()
	})
	var ge *googleapi.Error
	if errors.As(err, &ge) && (ge.Code == http.StatusConflict || ge.Code == http.StatusPreconditionFailed) {
		return fmt.Errorf("%s: %w", resource, ErrConcurrentChange)
	}
	return err
}

// throttleRetries is how many more times a call that Google IAM throttled
// (429) or could not serve (503) is made. The generated client retries
// nothing itself.
const throttleRetries = 3

// retryThrottled makes the call, and again after the wait the answer's
// Retry-After names (in seconds, at most a minute) or a doubling backoff
// from a second, while Google throttles it and ctx allows.
func retryThrottled[T any](ctx context.Context, call func() (T, error)) (T, error) {
	backoff := time.Second
	for try := 0; ; try++ {
		out, err := call()
		var ge *googleapi.Error
		if try == throttleRetries || !errors.As(err, &ge) || (ge.Code != http.StatusTooManyRequests && ge.Code != http.StatusServiceUnavailable) {
			return out, err
		}
		wait := backoff
		if s, perr := strconv.Atoi(ge.Header.Get("Retry-After")); perr == nil && s >= 0 {
			wait = min(time.Duration(s)*time.Second, time.Minute)
		}
		backoff *= 2
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return out, errors.Join(err, ctx.Err())
		case <-timer.C:
		}
	}
}

// DefaultIAM returns the IAM of a Google API client with application default
// credentials, made on first use so that a host that never serves this
// plugin needs no Google credentials.
func DefaultIAM() IAM {
	return lazyIAM{outside.NewLazy(func(context.Context) (IAM, error) {
		// The service outlives the call that makes it, so it must not take
		// that call's context.
		s, err := iam.NewService(context.Background(), option.WithScopes(iam.CloudPlatformScope))
		if err != nil {
			return nil, fmt.Errorf("Google IAM client: %w", err)
		}
		return NewIAM(s), nil
	})}
}

type lazyIAM struct{ c *outside.Lazy[IAM] }

func (l lazyIAM) Policy(ctx context.Context, resource string) (*iam.Policy, error) {
	c, err := l.c.Get(ctx)
	if err != nil {
		return nil, err
	}
	return c.Policy(ctx, resource)
}

func (l lazyIAM) SetPolicy(ctx context.Context, resource string, p *iam.Policy) error {
	c, err := l.c.Get(ctx)
	if err != nil {
		return err
	}
	return c.SetPolicy(ctx, resource, p)
}
