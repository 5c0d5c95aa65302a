package authpolicy

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "authpolicy"

// The environment variables that set the user-id header and prefix defaults,
// as the upstream profile controller reads them.
const (
	EnvUserIDHeader = "USERID_HEADER"
	EnvUserIDPrefix = "USERID_PREFIX"
)

// Defaults that hold unless the host configures otherwise.
const (
	DefaultName              = "profilekit-access"
	DefaultUserIDHeader      = "kubeflow-userid"
	DefaultGatewayPrincipal  = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
	DefaultNotebookPrincipal = "cluster.local/ns/kubeflow/sa/notebook-controller-service-account"
)

// Config is the authpolicy plugin's configuration. Every field is the
// host's: who may reach a namespace is not for a Profile to widen.
type Config struct {
	// Name of the access AuthorizationPolicy. Default profilekit-access.
	Name string `json:"name,omitempty" profilekit:"hostonly"`
	// UserIDHeader is the request header that carries the authenticated user,
	// set by the ingress gateway's authentication. Default $USERID_HEADER,
	// else kubeflow-userid.
	UserIDHeader string `json:"userIDHeader,omitempty" profilekit:"hostonly"`
	// UserIDPrefix comes before the user's name in the header, such as
	// accounts.google.com:. Default $USERID_PREFIX, else empty.
	UserIDPrefix string `json:"userIDPrefix,omitempty" profilekit:"hostonly"`
	// GatewayPrincipals are the identities of the ingress gateways that set
	// the header. The header is trusted only on requests from them, so that
	// no other workload can forge it.
	GatewayPrincipals []string `json:"gatewayPrincipals,omitempty" profilekit:"hostonly"`
	// Groups says where the mesh finds a request's groups (a header set by
	// the authenticating proxy, trusted only from GatewayPrincipals, or a
	// JWT claim), for a Profile owned by a Group and for group
	// contributors. Neither: they are left out of the access policy, and
	// the Profile reports InvalidSpec.
	Groups access.Groups `json:"groups" profilekit:"hostonly"`
	// SameNamespace lets the namespace's own workloads reach each other.
	// Default true.
	SameNamespace bool `json:"sameNamespace" profilekit:"hostonly"`
	// ProbePaths may be reached without authentication, with GET or HEAD
	// only, for health checks that do not go through the sidecar's probe
	// rewrite. Default none.
	ProbePaths []string `json:"probePaths,omitempty" profilekit:"hostonly"`
	// NotebookController lets the notebook controller call its notebooks'
	// status endpoints. Principals: [] turns the rule off.
	NotebookController Caller `json:"notebookController" profilekit:"hostonly"`
	// ContributorRoles are the values of a RoleBinding's role annotation that
	// make its user annotation a contributor. Default edit and view.
	ContributorRoles []string `json:"contributorRoles,omitempty" profilekit:"hostonly"`
	// Policies are further ALLOW or DENY policies for every Profile's
	// namespace.
	Policies []Policy `json:"policies,omitempty" profilekit:"hostonly"`
}

// Caller is a workload identity allowed to reach some paths.
type Caller struct {
	// Principals of the caller; none turns the rule off.
	Principals []string `json:"principals,omitempty"`
	// Paths it may reach; none means any. {{ .Namespace }} and
	// {{ .Profile }} stand for the Profile's namespace and name.
	Paths []string `json:"paths,omitempty"`
}

// Policy is a further AuthorizationPolicy, in the shape of Istio's. In every
// string value, {{ .Namespace }} and {{ .Profile }} stand for the Profile's
// namespace and name.
type Policy struct {
	// Name of the AuthorizationPolicy.
	Name string `json:"name"`
	// Action is ALLOW or DENY.
	Action string `json:"action"`
	// Selector picks the workloads by label; empty means the whole namespace.
	Selector map[string]string `json:"selector,omitempty"`
	// Rules of the policy. An ALLOW policy needs at least one; a DENY policy
	// with none denies nothing.
	Rules []Rule `json:"rules"`
}

// Rule matches requests: all of From, To and When must match. The shape is
// Istio's, so that rules can be copied from its documentation.
type Rule struct {
	From []From      `json:"from,omitempty"`
	To   []To        `json:"to,omitempty"`
	When []Condition `json:"when,omitempty"`
}

// From wraps a Source, as in Istio's rules.
type From struct {
	Source Source `json:"source"`
}

// To wraps an Operation, as in Istio's rules.
type To struct {
	Operation Operation `json:"operation"`
}

// Source is where a request comes from.
type Source struct {
	Principals           []string `json:"principals,omitempty"`
	NotPrincipals        []string `json:"notPrincipals,omitempty"`
	RequestPrincipals    []string `json:"requestPrincipals,omitempty"`
	NotRequestPrincipals []string `json:"notRequestPrincipals,omitempty"`
	Namespaces           []string `json:"namespaces,omitempty"`
	NotNamespaces        []string `json:"notNamespaces,omitempty"`
	IPBlocks             []string `json:"ipBlocks,omitempty"`
	NotIPBlocks          []string `json:"notIpBlocks,omitempty"`
}

// Operation is what a request does.
type Operation struct {
	Hosts      []string `json:"hosts,omitempty"`
	NotHosts   []string `json:"notHosts,omitempty"`
	Ports      []string `json:"ports,omitempty"`
	NotPorts   []string `json:"notPorts,omitempty"`
	Methods    []string `json:"methods,omitempty"`
	NotMethods []string `json:"notMethods,omitempty"`
	Paths      []string `json:"paths,omitempty"`
	NotPaths   []string `json:"notPaths,omitempty"`
}

// Condition is an Istio attribute and the values it must, or must not, have.
type Condition struct {
	Key       string   `json:"key"`
	Values    []string `json:"values,omitempty"`
	NotValues []string `json:"notValues,omitempty"`
}

// NewConfig returns a Config holding the built-in defaults, with the user-id
// header and prefix from the environment when set there.
func NewConfig() *Config { return newConfig(os.Getenv) }

func newConfig(getenv func(string) string) *Config {
	c := &Config{
		Name:               DefaultName,
		UserIDHeader:       DefaultUserIDHeader,
		UserIDPrefix:       getenv(EnvUserIDPrefix),
		GatewayPrincipals:  []string{DefaultGatewayPrincipal},
		SameNamespace:      true,
		NotebookController: Caller{Principals: []string{DefaultNotebookPrincipal}, Paths: []string{"/notebook/{{ .Namespace }}/*"}},
		ContributorRoles:   []string{"edit", "view"},
	}
	if h := getenv(EnvUserIDHeader); h != "" {
		c.UserIDHeader = h
	}
	return c
}

// Validate checks names, the header, principals and every placeholder.
func (c *Config) Validate() error {
	var errs []error
	names := map[string]bool{}
	checkName := func(at *fieldpath.Path, name string) {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", at, name, strings.Join(msgs, "; ")))
		}
		if plugins.IsUpstreamName(name) {
			errs = append(errs, fmt.Errorf("%s %q belongs to the upstream profile controller", at, name))
		}
		if names[name] {
			errs = append(errs, fmt.Errorf("%s %q: name given twice", at, name))
		}
		names[name] = true
	}
	checkName(fieldpath.NewPath("name"), c.Name)
	if !access.IsHeaderName(c.UserIDHeader) {
		errs = append(errs, fmt.Errorf("userIDHeader %q: not an HTTP header name", c.UserIDHeader))
	}
	errs = append(errs, c.Groups.Validate(fieldpath.NewPath("groups")))
	if c.Groups.Header != "" && strings.EqualFold(c.Groups.Header, c.UserIDHeader) {
		errs = append(errs, fmt.Errorf("groups.header %q is the user-id header", c.Groups.Header))
	}
	if len(c.GatewayPrincipals) == 0 {
		errs = append(errs, errors.New("gatewayPrincipals: at least one is needed, or no user could reach the namespace"))
	}
	errs = append(errs,
		checkStrings(fieldpath.NewPath("gatewayPrincipals"), c.GatewayPrincipals),
		checkStrings(fieldpath.NewPath("probePaths"), c.ProbePaths),
		checkStrings(fieldpath.NewPath("notebookController", "principals"), c.NotebookController.Principals),
		checkStrings(fieldpath.NewPath("notebookController", "paths"), c.NotebookController.Paths),
	)
	if len(c.ContributorRoles) == 0 {
		errs = append(errs, errors.New("contributorRoles: at least one role is needed"))
	}
	for i, p := range c.Policies {
		at := fieldpath.NewPath("policies").Index(i)
		checkName(at.Child("name"), p.Name)
		if p.Name != "" {
			at = fieldpath.NewPath("policies").Key(p.Name)
		}
		errs = append(errs, p.validate(at))
	}
	return errors.Join(errs...)
}

func (p *Policy) validate(at *fieldpath.Path) error {
	var errs []error
	switch p.Action {
	case "ALLOW":
		if len(p.Rules) == 0 {
			errs = append(errs, fmt.Errorf("%s: an ALLOW policy without rules would deny every request to the workloads it selects", at))
		}
	case "DENY":
	default:
		errs = append(errs, fmt.Errorf("%s %q: want ALLOW or DENY", at.Child("action"), p.Action))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Selector)) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: key %q: %s", at.Child("selector"), k, strings.Join(msgs, "; ")))
		}
		if err := checkTemplate(p.Selector[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("selector").Key(k), err))
		}
	}
	for i, r := range p.Rules {
		rat := at.Child("rules").Index(i)
		for j, s := range r.From {
			for _, f := range s.Source.fields() {
				errs = append(errs, checkStrings(rat.Child("from").Index(j).Child(f.name), *f.values))
			}
		}
		for j, o := range r.To {
			for _, f := range o.Operation.fields() {
				errs = append(errs, checkStrings(rat.Child("to").Index(j).Child(f.name), *f.values))
			}
		}
		for j, w := range r.When {
			if w.Key == "" || len(w.Values)+len(w.NotValues) == 0 {
				errs = append(errs, fmt.Errorf("%s: needs a key and values or notValues", rat.Child("when").Index(j)))
			}
			errs = append(errs, checkStrings(rat.Child("when").Index(j).Child("values"), w.Values),
				checkStrings(rat.Child("when").Index(j).Child("notValues"), w.NotValues))
		}
	}
	return errors.Join(errs...)
}

type field struct {
	name   string
	values *[]string
}

func (s *Source) fields() []field {
	return []field{
		{"principals", &s.Principals}, {"notPrincipals", &s.NotPrincipals},
		{"requestPrincipals", &s.RequestPrincipals}, {"notRequestPrincipals", &s.NotRequestPrincipals},
		{"namespaces", &s.Namespaces}, {"notNamespaces", &s.NotNamespaces},
		{"ipBlocks", &s.IPBlocks}, {"notIpBlocks", &s.NotIPBlocks},
	}
}

func (o *Operation) fields() []field {
	return []field{
		{"hosts", &o.Hosts}, {"notHosts", &o.NotHosts}, {"ports", &o.Ports}, {"notPorts", &o.NotPorts},
		{"methods", &o.Methods}, {"notMethods", &o.NotMethods}, {"paths", &o.Paths}, {"notPaths", &o.NotPaths},
	}
}

// checkStrings wants non-empty values with valid placeholders.
func checkStrings(at *fieldpath.Path, values []string) error {
	var errs []error
	for i, v := range values {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("%s: empty", at.Index(i)))
			continue
		}
		if err := checkTemplate(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Index(i), err))
		}
	}
	return errors.Join(errs...)
}
