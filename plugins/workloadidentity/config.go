package workloadidentity

import (
	"errors"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
)

// Kind is the plugin's name in spec.plugins, the upstream controller's.
const Kind = "WorkloadIdentity"

// AnnotationGSA is the annotation GKE's metadata server reads.
const AnnotationGSA = "iam.gke.io/gcp-service-account"

// RoleWorkloadIdentityUser lets a Kubernetes service account act as the
// Google service account.
const RoleWorkloadIdentityUser = "roles/iam.workloadIdentityUser"

// DefaultServiceAccount is the upstream controller's workload service account.
const DefaultServiceAccount = "default-editor"

// Config is the plugin's configuration. A Profile sets GCPServiceAccount,
// exactly as for the upstream controller; the rest is the host's. A host
// that sets gcpServiceAccount in its defaults and enables the plugin for all
// Profiles does what the upstream controller's -workload-identity flag does.
type Config struct {
	// GCPServiceAccount is the email of the Google service account the
	// Profile's service accounts act as: <name>@<project>.iam.gserviceaccount.com.
	GCPServiceAccount string `json:"gcpServiceAccount,omitempty"`
	// ServiceAccounts are the Profile's service accounts to annotate and
	// grant. Default [default-editor].
	ServiceAccounts []string `json:"serviceAccounts,omitempty" profilekit:"hostonly"`
	// WorkloadPool is the cluster's workload identity pool. Empty takes
	// <project of the Google service account>.svc.id.goog, right when the
	// cluster is in that project.
	WorkloadPool string `json:"workloadPool,omitempty" profilekit:"hostonly"`
	// AllowedIdentities are the Google service accounts Profiles may act
	// as, such as {{ .Namespace }}@ml-prod.iam.gserviceaccount.com. One no
	// allowance gives the Profile is refused (IdentityNotAllowed), and so is
	// every one while the list is empty; one that already serves another
	// Profile is a Conflict unless its allowance is shared.
	AllowedIdentities identities.Policy `json:"allowedIdentities,omitempty" profilekit:"hostonly"`
}

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{ServiceAccounts: []string{DefaultServiceAccount}}
}

var gsaEmail = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]@([a-z][a-z0-9-]{4,28}[a-z0-9])\.iam\.gserviceaccount\.com$`)

// Project returns the project of a Google service account email.
func Project(email string) (string, error) {
	m := gsaEmail.FindStringSubmatch(email)
	if m == nil {
		return "", fmt.Errorf("gcpServiceAccount %q: not a Google service account email (<name>@<project>.iam.gserviceaccount.com)", email)
	}
	return m[1], nil
}

// Pool returns the workload identity pool: the configured one, or the one
// of the Google service account's project.
func (c *Config) Pool() (string, error) {
	if c.WorkloadPool != "" {
		return c.WorkloadPool, nil
	}
	project, err := Project(c.GCPServiceAccount)
	if err != nil {
		return "", err
	}
	return project + ".svc.id.goog", nil
}

var pool = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]\.svc\.id\.goog$`)

// Validate checks the email (when set), the service account names and the
// pool. A Profile without gcpServiceAccount is reported when the plugin
// applies.
func (c *Config) Validate() error {
	var errs []error
	if c.GCPServiceAccount != "" {
		if _, err := Project(c.GCPServiceAccount); err != nil {
			errs = append(errs, err)
		}
	}
	if err := serviceaccounts.Check(c.ServiceAccounts); err != nil {
		errs = append(errs, err)
	}
	if c.WorkloadPool != "" && !pool.MatchString(c.WorkloadPool) {
		errs = append(errs, fmt.Errorf("workloadPool %q: want <project>.svc.id.goog", c.WorkloadPool))
	}
	if err := c.AllowedIdentities.Validate(); err != nil {
		errs = append(errs, err)
	}
	for i, a := range c.AllowedIdentities {
		if a.NeedsTag() {
			errs = append(errs, fmt.Errorf("%s: the plugin reads no tags of its cloud's identities; list the identities instead", field.NewPath("allowedIdentities").Index(i).Child("tag")))
		}
	}
	return errors.Join(errs...)
}
