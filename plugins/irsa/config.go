package irsa

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
)

// Kind is the plugin's name in spec.plugins, the upstream controller's.
const Kind = "AwsIamForServiceAccount"

// AnnotationRoleARN is the annotation EKS's pod identity webhook reads.
const AnnotationRoleARN = "eks.amazonaws.com/role-arn"

// Subject forms of the trust policy.
const (
	// SubjectsExact lists each Profile's service accounts in the role's trust
	// policy, one subject per service account.
	SubjectsExact = "exact"
	// SubjectsWildcard trusts the configured service account names in every
	// namespace through one StringLike pattern per name, so that the policy
	// does not grow with the number of Profiles. Any namespace's service
	// account of that name may then assume the role: use it only for roles
	// meant for all Profiles.
	SubjectsWildcard = "wildcard"
)

// Config is the plugin's configuration. A Profile sets AwsIAMRole and
// AnnotateOnly, exactly as for the upstream controller; the rest is the
// host's.
type Config struct {
	// AwsIAMRole is the ARN of the IAM role the Profile's service accounts
	// assume.
	AwsIAMRole string `json:"awsIamRole,omitempty"`
	// AnnotateOnly only annotates the service accounts and leaves the role's
	// trust policy to someone else.
	AnnotateOnly bool `json:"annotateOnly,omitempty"`
	// ServiceAccounts are the Profile's service accounts to annotate and
	// trust. Default [default-editor].
	ServiceAccounts []string `json:"serviceAccounts,omitempty" profilekit:"hostonly"`
	// OIDCProvider is the ARN of the cluster's IAM OIDC provider. Empty takes
	// the provider of the first web identity statement of the role's trust
	// policy.
	OIDCProvider string `json:"oidcProvider,omitempty" profilekit:"hostonly"`
	// Audience is the token audience a new trust statement requires.
	// Default sts.amazonaws.com.
	Audience string `json:"audience,omitempty" profilekit:"hostonly"`
	// Subjects is the subject form, exact (default) or wildcard.
	Subjects string `json:"subjects,omitempty" profilekit:"hostonly"`
	// AdoptStatements lets the plugin claim, by giving it the Profile's Sid,
	// a trust statement without a Sid that has exactly the form the plugin
	// writes and trusts only the Profile's service accounts, such as one
	// written by a version of the plugin before Sids. Off, such a statement
	// is someone else's: kept, never changed, and its subjects are not added
	// again. Default false.
	AdoptStatements bool `json:"adoptStatements,omitempty" profilekit:"hostonly"`
	// MaxPolicySize is the trust policy size limit of the account, in
	// characters without white space. Default 2048, IAM's default quota.
	MaxPolicySize int `json:"maxPolicySize,omitempty" profilekit:"hostonly"`
	// AllowedIdentities are the role ARNs Profiles may name, such as
	// arn:aws:iam::123456789012:role/kf-{{ .Namespace }}. A role no
	// allowance gives the Profile is refused (IdentityNotAllowed), and so is
	// every role while the list is empty; a role that already serves
	// another Profile is a Conflict unless its allowance is shared.
	AllowedIdentities identities.Policy `json:"allowedIdentities,omitempty" profilekit:"hostonly"`
}

// DefaultServiceAccount is the upstream controller's workload service account.
const DefaultServiceAccount = "default-editor"

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{
		ServiceAccounts: []string{DefaultServiceAccount},
		Audience:        trustpolicy.DefaultAudience,
		Subjects:        SubjectsExact,
		MaxPolicySize:   trustpolicy.DefaultMaxPolicySize,
	}
}

var roleARN = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:role/(?:[\x21-\x7e]*/)?([\w+=,.@-]{1,64})$`)

// RoleName returns the role name of an IAM role ARN.
func RoleName(arn string) (string, error) {
	m := roleARN.FindStringSubmatch(arn)
	if m == nil {
		return "", fmt.Errorf("awsIamRole %q: not an IAM role ARN (arn:aws:iam::<12-digit account>:role/<name>)", arn)
	}
	return m[1], nil
}

// Validate checks the role ARN (when set), the service account names, the
// provider and the subject form. A Profile without awsIamRole is reported
// when the plugin applies.
func (c *Config) Validate() error {
	var errs []error
	if c.AwsIAMRole != "" {
		if _, err := RoleName(c.AwsIAMRole); err != nil {
			errs = append(errs, err)
		}
	}
	if err := serviceaccounts.Check(c.ServiceAccounts); err != nil {
		errs = append(errs, err)
	}
	if c.OIDCProvider != "" {
		if _, err := trustpolicy.Issuer(c.OIDCProvider); err != nil {
			errs = append(errs, fmt.Errorf("oidcProvider: %w", err))
		}
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("audience: must not be empty"))
	}
	if c.Subjects != SubjectsExact && c.Subjects != SubjectsWildcard {
		errs = append(errs, fmt.Errorf("subjects %q: want %s or %s", c.Subjects, SubjectsExact, SubjectsWildcard))
	}
	if c.MaxPolicySize < 0 {
		errs = append(errs, fmt.Errorf("maxPolicySize %d: must not be negative", c.MaxPolicySize))
	}
	if err := c.AllowedIdentities.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
