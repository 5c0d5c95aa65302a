package core

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins/internal/access"
)

// Kind is the plugin's name in spec.plugins and in the host configuration.
const Kind = "core"

// The environment variables the upstream controller reads, taken as defaults
// under the host configuration file.
const (
	EnvUserIDHeader         = "USERID_HEADER"
	EnvUserIDPrefix         = "USERID_PREFIX"
	EnvIngressPrincipal     = "ISTIO_INGRESS_GATEWAY_PRINCIPAL"
	EnvPipelinesUIPrincipal = "KFP_UI_PRINCIPAL"
	EnvNotebookPrincipal    = "NOTEBOOK_CONTROLLER_PRINCIPAL"
)

// The defaults, which are the upstream controller's.
const (
	DefaultUserIDHeader         = "kubeflow-userid"
	DefaultIngressPrincipal     = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
	DefaultPipelinesUIPrincipal = "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"
	DefaultNotebookPrincipal    = "cluster.local/ns/kubeflow/sa/notebook-controller-service-account"
)

// Mesh modes: how a Profile's namespace joins the Istio mesh.
const (
	// MeshSidecar labels the namespace istio-injection: enabled, as the
	// upstream controller does.
	MeshSidecar = "sidecar"
	// MeshNone adds no mesh label.
	MeshNone = "none"
)

// Config is the core plugin's configuration. Every field is the host's: a
// Profile cannot change how its own namespace is guarded.
type Config struct {
	// NamespaceLabelsPath is a YAML file of labels for every Profile's
	// namespace, in the upstream controller's format: `key: value` adds the
	// label when the namespace does not have it (an existing value is never
	// changed), `key: ""` removes it. The file is watched; a change applies
	// to every Profile. Empty means no such file.
	NamespaceLabelsPath string `json:"namespaceLabelsPath,omitempty" profilekit:"hostonly"`
	// UserIDHeader is the request header that carries the user's identity
	// from the ingress gateway. Default kubeflow-userid, or USERID_HEADER.
	UserIDHeader string `json:"userIdHeader,omitempty" profilekit:"hostonly"`
	// UserIDPrefix comes before the owner's name in that header. Default
	// empty, or USERID_PREFIX.
	UserIDPrefix string `json:"userIdPrefix,omitempty" profilekit:"hostonly"`
	// Mesh is sidecar (default) or none.
	Mesh string `json:"mesh,omitempty" profilekit:"hostonly"`
	// Principals are the workload identities the AuthorizationPolicy names.
	Principals Principals `json:"principals" profilekit:"hostonly"`
	// OwnerFromGatewayOnly lets the owner's header count only on requests
	// from the ingress gateway, not from the pipelines UI.
	OwnerFromGatewayOnly bool `json:"ownerFromGatewayOnly,omitempty" profilekit:"hostonly"`
	// Groups says where the mesh finds a request's groups (a header the
	// authenticating proxy sets, a JWT claim), so that a Profile owned by
	// a Group admits the group's members. Neither: a Group owner gets RBAC
	// only, and the Profile reports InvalidSpec.
	Groups access.Groups `json:"groups" profilekit:"hostonly"`
	// Adopt takes over, in place, the objects the upstream controller made
	// (same names, no managed-by label) and namespaces whose owner annotation
	// names the Profile's owner. Off, such an object is a Conflict.
	Adopt bool `json:"adopt,omitempty" profilekit:"hostonly"`
	// HandOverFinalizer takes the upstream controller's finalizer
	// (UpstreamFinalizer) off each Profile the host serves, once it serves
	// it: CoreReady and Ready are True, and every upstream plugin kind the
	// Profile lists (UpstreamPluginKinds) is served by a plugin of this
	// host that holds its own finalizer on the Profile. A Profile that lists
	// one that no plugin of this host serves keeps upstream's finalizer,
	// which guards that plugin's cleanup. On while moving from the upstream
	// controller, once it is stopped; see the reconcilers package's
	// FinalizerHandOver for the whole rule.
	HandOverFinalizer bool `json:"handOverFinalizer,omitempty" profilekit:"hostonly"`
}

// UpstreamFinalizer is the finalizer the upstream controller puts on every
// Profile it serves and removes, on deletion, after it revoked its plugins.
const UpstreamFinalizer = "profile-finalizer"

// UpstreamPluginKinds are the plugin kinds the upstream controller itself
// serves, whose cleanup its finalizer guards.
var UpstreamPluginKinds = []string{"WorkloadIdentity", "AwsIamForServiceAccount"}

// HandedOverFinalizer returns UpstreamFinalizer and UpstreamPluginKinds
// when the host hands the finalizer over (HandOverFinalizer), else "" and
// nil. Hosts call it through reconcilers.FinalizerHandOver.
func (c *Config) HandedOverFinalizer() (string, []string) {
	if !c.HandOverFinalizer {
		return "", nil
	}
	return UpstreamFinalizer, slices.Clone(UpstreamPluginKinds)
}

// Principals are the Istio principals of the callers the owner's
// AuthorizationPolicy lets in.
type Principals struct {
	// IngressGateway forwards users' requests with the user-id header.
	// Default upstream's, or ISTIO_INGRESS_GATEWAY_PRINCIPAL.
	IngressGateway string `json:"ingressGateway,omitempty"`
	// PipelinesUI forwards users' requests too. Default upstream's, or
	// KFP_UI_PRINCIPAL.
	PipelinesUI string `json:"pipelinesUI,omitempty"`
	// NotebookController probes the notebook servers' kernels. Default
	// upstream's, or NOTEBOOK_CONTROLLER_PRINCIPAL.
	NotebookController string `json:"notebookController,omitempty"`
}

// NewConfig returns a Config holding the built-in defaults, with the
// environment's values (the upstream controller's variables) on top.
func NewConfig() *Config { return ConfigFromEnv(os.Getenv) }

// ConfigFromEnv returns the built-in defaults with the values getenv gives
// for the upstream controller's variables on top.
func ConfigFromEnv(getenv func(string) string) *Config {
	or := func(env, def string) string {
		if v := getenv(env); v != "" {
			return v
		}
		return def
	}
	return &Config{
		UserIDHeader: or(EnvUserIDHeader, DefaultUserIDHeader),
		UserIDPrefix: getenv(EnvUserIDPrefix),
		Mesh:         MeshSidecar,
		Principals: Principals{
			IngressGateway:     or(EnvIngressPrincipal, DefaultIngressPrincipal),
			PipelinesUI:        or(EnvPipelinesUIPrincipal, DefaultPipelinesUIPrincipal),
			NotebookController: or(EnvNotebookPrincipal, DefaultNotebookPrincipal),
		},
	}
}

// Validate checks the headers, the mesh mode and the principals.
func (c *Config) Validate() error {
	var errs []error
	if c.UserIDHeader == "" {
		errs = append(errs, errors.New("userIdHeader is empty"))
	} else if msgs := validation.IsHTTPHeaderName(c.UserIDHeader); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("userIdHeader %q: %s", c.UserIDHeader, strings.Join(msgs, "; ")))
	}
	if c.Mesh != MeshSidecar && c.Mesh != MeshNone {
		errs = append(errs, fmt.Errorf("mesh %q: want %s or %s", c.Mesh, MeshSidecar, MeshNone))
	}
	errs = append(errs, c.Groups.Validate(fieldpath.NewPath("groups")))
	if c.Groups.Header != "" && strings.EqualFold(c.Groups.Header, c.UserIDHeader) {
		errs = append(errs, fmt.Errorf("groups.header %q is the user-id header", c.Groups.Header))
	}
	for _, p := range []struct{ field, value string }{
		{"principals.ingressGateway", c.Principals.IngressGateway},
		{"principals.pipelinesUI", c.Principals.PipelinesUI},
		{"principals.notebookController", c.Principals.NotebookController},
	} {
		if p.value == "" && (p.field != "principals.pipelinesUI" || !c.OwnerFromGatewayOnly) {
			errs = append(errs, fmt.Errorf("%s is empty", p.field))
		}
		if strings.ContainsAny(p.value, " \t\n") {
			errs = append(errs, fmt.Errorf("%s %q contains white space", p.field, p.value))
		}
	}
	return errors.Join(errs...)
}
