package contributors

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

// Kind is the plugin's name in spec.plugins and in the host configuration.
const Kind = "contributors"

// The roles a contributor may have, as the access-management service (KFAM)
// and the dashboard name them. Each binds the ClusterRole kubeflow-<role>.
const (
	RoleAdmin = "admin"
	RoleEdit  = "edit"
	RoleView  = "view"
)

// DefaultMaxContributors is how many entries a Profile may declare unless
// the host says otherwise.
const DefaultMaxContributors = 50

// Config is the contributors plugin's configuration. A Profile sets
// Contributors; every other field is the host's.
type Config struct {
	// Contributors are the people, groups and service accounts the Profile
	// lets into its namespace. A list in the host's defaults is replaced,
	// not merged, by a Profile's.
	Contributors []Contributor `json:"contributors,omitempty"`

	// UserIDHeader is the request header in which the ingress gateway
	// passes the authenticated user. Default kubeflow-userid, or
	// USERID_HEADER.
	UserIDHeader string `json:"userIDHeader,omitempty" profilekit:"hostonly"`
	// UserIDPrefix comes before the user's name in that header, such as
	// accounts.google.com:. Default empty, or USERID_PREFIX.
	UserIDPrefix string `json:"userIDPrefix,omitempty" profilekit:"hostonly"`
	// Principals are the callers whose user-id (or groups) header counts.
	Principals Principals `json:"principals" profilekit:"hostonly"`
	// Groups says where the mesh finds a request's groups, for Group
	// entries. Neither header nor claim: a Group entry gets its RoleBinding
	// only, and the Profile's condition says so.
	Groups access.Groups `json:"groups" profilekit:"hostonly"`
	// Roles are the roles a Profile may grant. Default edit and view:
	// admin, which lets a contributor manage the namespace's RBAC, is the
	// host's to allow.
	Roles []string `json:"roles,omitempty" profilekit:"hostonly"`
	// Kinds are the subject kinds a Profile may name. Default User and
	// Group; ServiceAccount is the host's to allow.
	Kinds []string `json:"kinds,omitempty" profilekit:"hostonly"`
	// MaxContributors is how many entries a Profile may declare; those past
	// it are refused. Default 50.
	MaxContributors int `json:"maxContributors,omitempty" profilekit:"hostonly"`
	// UserDomains, when not empty, are the only user names a Profile may
	// name, as patterns such as *@example.org or *@*.example.org, where
	// each "*" stands for one or more characters other than "@". Empty:
	// any user.
	UserDomains []string `json:"userDomains,omitempty" profilekit:"hostonly"`
}

// Contributor is one entry of a Profile's contributors.
type Contributor struct {
	// Kind is User, Group or ServiceAccount.
	Kind string `json:"kind"`
	// Name is the user's name as the user-id header carries it (without
	// the prefix), the group's, or the service account's.
	Name string `json:"name"`
	// Role is admin, edit or view.
	Role string `json:"role"`
	// Namespace of a ServiceAccount; default the Profile's. Other kinds
	// have none.
	Namespace string `json:"namespace,omitempty"`
}

// Principals are the Istio principals of the callers that forward a user's
// requests with the user-id header.
type Principals struct {
	// IngressGateway is the ingress gateway. Default upstream's, or
	// ISTIO_INGRESS_GATEWAY_PRINCIPAL.
	IngressGateway string `json:"ingressGateway,omitempty"`
	// PipelinesUI is the pipelines UI, which calls a namespace's services
	// on the user's behalf. Default upstream's, or KFP_UI_PRINCIPAL; empty:
	// the gateway alone.
	PipelinesUI string `json:"pipelinesUI,omitempty"`
}

// List returns the principals that are set, gateway first.
func (p Principals) List() []string {
	out := []string{p.IngressGateway}
	if p.PipelinesUI != "" {
		out = append(out, p.PipelinesUI)
	}
	return out
}

// NewConfig returns a Config holding the built-in defaults, with the
// environment's values (the upstream controller's variables) on top.
func NewConfig() *Config { return ConfigFromEnv(os.Getenv) }

// ConfigFromEnv returns the built-in defaults with the values getenv gives
// for USERID_HEADER, USERID_PREFIX, ISTIO_INGRESS_GATEWAY_PRINCIPAL and
// KFP_UI_PRINCIPAL on top.
func ConfigFromEnv(getenv func(string) string) *Config {
	or := func(env, def string) string {
		if v := getenv(env); v != "" {
			return v
		}
		return def
	}
	return &Config{
		UserIDHeader: or(core.EnvUserIDHeader, core.DefaultUserIDHeader),
		UserIDPrefix: getenv(core.EnvUserIDPrefix),
		Principals: Principals{
			IngressGateway: or(core.EnvIngressPrincipal, core.DefaultIngressPrincipal),
			PipelinesUI:    or(core.EnvPipelinesUIPrincipal, core.DefaultPipelinesUIPrincipal),
		},
		Roles:           []string{RoleEdit, RoleView},
		Kinds:           []string{rbacv1.UserKind, rbacv1.GroupKind},
		MaxContributors: DefaultMaxContributors,
	}
}

// Validate checks the host's fields. The Profile's entries are checked one
// by one when the plugin builds its objects, so that a bad entry refuses
// only itself.
func (c *Config) Validate() error {
	var errs []error
	if !access.IsHeaderName(c.UserIDHeader) {
		errs = append(errs, fmt.Errorf("userIDHeader %q: not an HTTP header name", c.UserIDHeader))
	}
	if strings.HasPrefix(c.UserIDPrefix, "*") {
		errs = append(errs, fmt.Errorf("userIDPrefix %q: Istio would read a leading \"*\" as a wildcard", c.UserIDPrefix))
	}
	if c.Principals.IngressGateway == "" {
		errs = append(errs, errors.New("principals.ingressGateway is empty: no user could reach the namespace"))
	}
	for _, p := range []struct{ field, value string }{
		{"principals.ingressGateway", c.Principals.IngressGateway},
		{"principals.pipelinesUI", c.Principals.PipelinesUI},
	} {
		if strings.ContainsAny(p.value, " \t\n") {
			errs = append(errs, fmt.Errorf("%s %q contains white space", p.field, p.value))
		}
	}
	errs = append(errs, c.Groups.Validate(fieldpath.NewPath("groups")))
	errs = append(errs, checkList("roles", c.Roles, []string{RoleAdmin, RoleEdit, RoleView}))
	errs = append(errs, checkList("kinds", c.Kinds, []string{rbacv1.UserKind, rbacv1.GroupKind, rbacv1.ServiceAccountKind}))
	if c.MaxContributors < 1 {
		errs = append(errs, fmt.Errorf("maxContributors %d: want at least 1 (to allow no contributors, do not enable the plugin)", c.MaxContributors))
	}
	for i, d := range c.UserDomains {
		if err := checkDomainPattern(d); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fieldpath.NewPath("userDomains").Index(i), err))
		}
	}
	return errors.Join(errs...)
}

// checkList fails when values is empty, repeats a value, or holds one that
// is not among known.
func checkList(field string, values, known []string) error {
	if len(values) == 0 {
		return fmt.Errorf("%s: at least one of %s is needed", field, strings.Join(known, ", "))
	}
	var errs []error
	for i, v := range values {
		at := fieldpath.NewPath(field).Index(i)
		switch {
		case !slices.Contains(known, v):
			errs = append(errs, fmt.Errorf("%s %q: want one of %s", at, v, strings.Join(known, ", ")))
		case slices.Index(values, v) < i:
			errs = append(errs, fmt.Errorf("%s %q: listed twice", at, v))
		}
	}
	return errors.Join(errs...)
}
