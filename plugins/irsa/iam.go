package irsa

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/profilekit/profilekit/plugins/outside"
)

//go:generate mockgen -typed -source=iam.go -destination=iammock/iam.go -package=iammock

// IAM is the part of the AWS IAM API the plugin calls: a role's trust
// policy, read and replaced.
type IAM interface {
	// TrustPolicy returns the trust policy document of the named role as
	// JSON. A role that does not exist is an error that wraps ErrNoRole.
	TrustPolicy(ctx context.Context, role string) (string, error)
	// SetTrustPolicy replaces the trust policy of the named role.
	SetTrustPolicy(ctx context.Context, role, doc string) error
	// RoleTags returns the tags of the named role. A role that does not
	// exist is an error that wraps ErrNoRole.
	RoleTags(ctx context.Context, role string) (map[string]string, error)
}

// ErrNoRole is a role that does not exist.
var ErrNoRole = errors.New("no such IAM role")

// NewIAM returns the IAM of an AWS SDK client, such as
// iam.NewFromConfig(cfg) with cfg from config.LoadDefaultConfig, which
// takes credentials from the environment, EKS pod identity or IRSA.
func NewIAM(c *iam.Client) IAM { return sdkIAM{c} }

type sdkIAM struct{ c *iam.Client }

func (s sdkIAM) TrustPolicy(ctx context.Context, role string) (string, error) {
	out, err := s.c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)})
	var nse *iamtypes.NoSuchEntityException
	if errors.As(err, &nse) {
		return "", fmt.Errorf("role %s: %w", role, ErrNoRole)
	}
	if err != nil {
		return "", err
	}
	// IAM returns the document URL-encoded.
	doc, err := url.QueryUnescape(aws.ToString(out.Role.AssumeRolePolicyDocument))
	if err != nil {
		return "", fmt.Errorf("decode trust policy of role %s: %w", role, err)
	}
	return doc, nil
}

func (s sdkIAM) RoleTags(ctx context.Context, role string) (map[string]string, error) {
	out, err := s.c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)})
	var nse *iamtypes.NoSuchEntityException
	if errors.As(err, &nse) {
		return nil, fmt.Errorf("role %s: %w", role, ErrNoRole)
	}
	if err != nil {
		return nil, err
	}
	tags := make(map[string]string, len(out.Role.Tags))
	for _, t := range out.Role.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return tags, nil
}

func (s sdkIAM) SetTrustPolicy(ctx context.Context, role, doc string) error {
	_, err := s.c.UpdateAssumeRolePolicy(ctx, &iam.UpdateAssumeRolePolicyInput{RoleName: aws.String(role), PolicyDocument: aws.String(doc)})
	return err
}

// DefaultIAM returns the IAM of an AWS SDK client with the default credential
// chain, made on first use so that a host that never serves this plugin
// needs no AWS configuration.
func DefaultIAM() IAM {
	return lazyIAM{outside.NewLazy(func(ctx context.Context) (IAM, error) {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("AWS configuration: %w", err)
		}
		return NewIAM(iam.NewFromConfig(cfg)), nil
	})}
}

type lazyIAM struct{ c *outside.Lazy[IAM] }

func (l lazyIAM) TrustPolicy(ctx context.Context, role string) (string, error) {
	c, err := l.c.Get(ctx)
	if err != nil {
		return "", err
	}
	return c.TrustPolicy(ctx, role)
}

func (l lazyIAM) SetTrustPolicy(ctx context.Context, role, doc string) error {
	c, err := l.c.Get(ctx)
	if err != nil {
		return err
	}
	return c.SetTrustPolicy(ctx, role, doc)
}

func (l lazyIAM) RoleTags(ctx context.Context, role string) (map[string]string, error) {
	c, err := l.c.Get(ctx)
	if err != nil {
		return nil, err
	}
	return c.RoleTags(ctx, role)
}
