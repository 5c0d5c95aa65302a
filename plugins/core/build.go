package core

import (
	"encoding/json"
	"fmt"

	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1ac "istio.io/client-go/pkg/applyconfiguration/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

// The names of the upstream controller's objects, which the dashboard, the
// access-management service (KFAM), notebooks and pipelines look for.
const (
	OwnerRoleBinding    = "namespaceAdmin"
	EditorAccount       = "default-editor"
	ViewerAccount       = "default-viewer"
	AuthorizationPolicy = "ns-owner-access-istio"
	ResourceQuota       = "kf-resource-quota"
)

// The ClusterRoles the bindings refer to, and the annotations KFAM reads.
const (
	ClusterRoleAdmin = "kubeflow-admin"
	ClusterRoleEdit  = "kubeflow-edit"
	ClusterRoleView  = "kubeflow-view"

	AnnotationOwner = "owner"
	AnnotationUser  = "user"
	AnnotationRole  = "role"
	RoleAdmin       = "admin"
)

// ProbePaths are the paths every workload serves to Knative's probes.
var ProbePaths = []string{"/healthz", "/metrics", "/wait-for-drain"}

// KernelsPath is what the notebook controller reads on every notebook server.
const KernelsPath = "*/api/kernels"

// Namespace returns the Profile's namespace with its owner annotation and
// labels.
func Namespace(p *kubeflowv1.Profile, labels map[string]string) *corev1ac.NamespaceApplyConfiguration {
	ns := corev1ac.Namespace(plugins.Namespace(p)).
		WithAnnotations(map[string]string{AnnotationOwner: p.Spec.Owner.Name})
	if len(labels) > 0 {
		ns.WithLabels(labels)
	}
	return ns
}

// OwnerBinding returns the RoleBinding that makes the owner admin of the
// namespace, annotated as KFAM expects. Its subject is OwnerSubject.
func OwnerBinding(p *kubeflowv1.Profile) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(OwnerRoleBinding, plugins.Namespace(p)).
		WithAnnotations(map[string]string{AnnotationUser: p.Spec.Owner.Name, AnnotationRole: RoleAdmin}).
		WithRoleRef(clusterRole(ClusterRoleAdmin)).
		WithSubjects(OwnerSubject(p.Spec.Owner))
}

// OwnerSubject returns the owner o as the API server stores it in a
// RoleBinding: a User or Group without apiGroup gets
// rbac.authorization.k8s.io, as the API server's defaulting gives it, and a
// ServiceAccount keeps none. The upstream controller writes spec.owner as it
// is, and kubectl-made and KFAM-made Profiles name no apiGroup: a subject
// sent without it differs from the stored one, and the subjects list is
// atomic: taking over upstream's binding without force would be refused
// with a conflict on .subjects.
func OwnerSubject(o rbacv1.Subject) *rbacv1ac.SubjectApplyConfiguration {
	subject := rbacv1ac.Subject().WithKind(o.Kind).WithName(o.Name)
	group := o.APIGroup
	if group == "" && (o.Kind == rbacv1.UserKind || o.Kind == rbacv1.GroupKind) {
		group = rbacv1.GroupName
	}
	if group != "" {
		subject.WithAPIGroup(group)
	}
	if o.Namespace != "" {
		subject.WithNamespace(o.Namespace)
	}
	return subject
}

// ServiceAccount returns one of the default service accounts: its name only,
// so that annotations others put on it (workload identities) stay theirs.
func ServiceAccount(p *kubeflowv1.Profile, name string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(name, plugins.Namespace(p))
}

// AccountBinding returns the RoleBinding of a default service account to a
// ClusterRole; it has the account's name.
func AccountBinding(p *kubeflowv1.Profile, account, role string) *rbacv1ac.RoleBindingApplyConfiguration {
	ns := plugins.Namespace(p)
	return rbacv1ac.RoleBinding(account, ns).
		WithRoleRef(clusterRole(role)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(account).WithNamespace(ns))
}

func clusterRole(name string) *rbacv1ac.RoleRefApplyConfiguration {
	return rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(name)
}

// AccessSpec returns the rules of the owner's AuthorizationPolicy: the owner
// through the ingress gateway (and the pipelines UI, unless
// OwnerFromGatewayOnly), any workload of the same namespace, the probe
// paths, and the notebook controller's GET of the kernels. A User owner is
// admitted by the user-id header, a Group owner by the groups header or
// claim (cfg.Groups), a ServiceAccount owner by no header at all (its
// access is RBAC's). An owner that cannot be matched exactly gets no rule,
// and the error, a terminal InvalidSpec one, names it; the spec holds the
// other rules all the same.
func AccessSpec(cfg *Config, p *kubeflowv1.Profile) (*securityv1beta1.AuthorizationPolicy, error) {
	principals := []string{cfg.Principals.IngressGateway}
	if !cfg.OwnerFromGatewayOnly {
		principals = append(principals, cfg.Principals.PipelinesUI)
	}
	rules, err := ownerRules(cfg, p.Spec.Owner, principals)
	rules = append(rules,
		&securityv1beta1.Rule{
			When: []*securityv1beta1.Condition{{Key: "source.namespace", Values: []string{plugins.Namespace(p)}}},
		},
		&securityv1beta1.Rule{
			To: []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Paths: append([]string(nil), ProbePaths...)}}},
		},
		&securityv1beta1.Rule{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{cfg.Principals.NotebookController}}}},
			To:   []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Methods: []string{"GET"}, Paths: []string{KernelsPath}}}},
		},
	)
	return &securityv1beta1.AuthorizationPolicy{Action: securityv1beta1.AuthorizationPolicy_ALLOW, Rules: rules}, err
}

// ownerRules returns the rules that admit the owner o, through principals.
func ownerRules(cfg *Config, o rbacv1.Subject, principals []string) ([]*securityv1beta1.Rule, error) {
	refuse := func(err error) error {
		return plugins.Terminalf(plugins.ReasonInvalidSpec, "spec.owner: %w; %s admits no one by it", err, AuthorizationPolicy)
	}
	switch o.Kind {
	case rbacv1.UserKind:
		user := cfg.UserIDPrefix + o.Name
		if err := access.CheckUser(user); err != nil {
			return nil, refuse(err)
		}
		return []*securityv1beta1.Rule{{
			When: []*securityv1beta1.Condition{{Key: access.HeaderKey(cfg.UserIDHeader), Values: []string{user}}},
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: principals}}},
		}}, nil
	case rbacv1.GroupKind:
		if !cfg.Groups.Enabled() {
			return nil, refuse(fmt.Errorf("group %q: the host configures neither a groups header nor a groups claim (core's groups), so no request can be told to come from a member", o.Name))
		}
		if err := cfg.Groups.CheckGroup(o.Name); err != nil {
			return nil, refuse(err)
		}
		return cfg.Groups.Rules(principals, []string{o.Name}), nil
	case rbacv1.ServiceAccountKind:
		// A service account calls with its own identity, which RBAC
		// checks; no header speaks for it.
		return nil, nil
	}
	return nil, refuse(fmt.Errorf("kind %q: want %s, %s or %s", o.Kind, rbacv1.UserKind, rbacv1.GroupKind, rbacv1.ServiceAccountKind))
}

// Policy returns the owner's AuthorizationPolicy, and AccessSpec's error
// for an owner it cannot admit.
func Policy(cfg *Config, p *kubeflowv1.Profile) (*securityv1ac.AuthorizationPolicyApplyConfiguration, error) {
	ap := securityv1ac.AuthorizationPolicy(AuthorizationPolicy, plugins.Namespace(p)).
		WithAnnotations(map[string]string{AnnotationUser: p.Spec.Owner.Name, AnnotationRole: RoleAdmin})
	// The generated WithSpec takes the message by value, copying its
	// internal state; set the pointer instead.
	var err error
	ap.Spec, err = AccessSpec(cfg, p)
	return ap, err
}

// Quota returns kf-resource-quota with the Profile's resourceQuotaSpec, or
// nil when it sets no hard limit.
func Quota(p *kubeflowv1.Profile) (*corev1ac.ResourceQuotaApplyConfiguration, error) {
	spec := p.Spec.ResourceQuotaSpec
	if len(spec.Hard) == 0 {
		return nil, nil
	}
	// The apply configuration has the same JSON shape as the API type, so
	// every field of the spec (hard, scopes, scopeSelector) carries over.
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode spec.resourceQuotaSpec: %w", err)
	}
	ac := corev1ac.ResourceQuotaSpec()
	if err := json.Unmarshal(data, ac); err != nil {
		return nil, fmt.Errorf("decode spec.resourceQuotaSpec: %w", err)
	}
	return corev1ac.ResourceQuota(ResourceQuota, plugins.Namespace(p)).WithSpec(ac), nil
}

// Build returns every object the core plugin writes for p, the namespace
// with labels first. It fails, as a terminal InvalidSpec error, when the
// Profile has no owner or an invalid quota, returning no object. When the
// AuthorizationPolicy cannot admit the owner (see AccessSpec) it returns
// every object, the policy without the owner's rule, and that error: the
// caller applies the objects and reports the error.
func Build(cfg *Config, p *kubeflowv1.Profile, labels map[string]string) ([]runtime.ApplyConfiguration, error) {
	if p.Spec.Owner.Name == "" || p.Spec.Owner.Kind == "" {
		return nil, plugins.Terminalf(plugins.ReasonInvalidSpec, "spec.owner: kind %q, name %q: the Profile needs an owner", p.Spec.Owner.Kind, p.Spec.Owner.Name)
	}
	q, err := Quota(p)
	if err != nil {
		return nil, plugins.Terminal(plugins.ReasonInvalidSpec, err)
	}
	policy, ownerErr := Policy(cfg, p)
	out := []runtime.ApplyConfiguration{
		Namespace(p, labels),
		OwnerBinding(p),
		ServiceAccount(p, EditorAccount),
		AccountBinding(p, EditorAccount, ClusterRoleEdit),
		ServiceAccount(p, ViewerAccount),
		AccountBinding(p, ViewerAccount, ClusterRoleView),
		apply.Encoded(policy),
	}
	if q != nil {
		out = append(out, q)
	}
	return out, ownerErr
}
