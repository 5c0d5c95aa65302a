package gitea

import (
	"maps"
	"net"
	"strconv"

	istionetworkingv1 "istio.io/api/networking/v1"
	istioac "istio.io/client-go/pkg/applyconfiguration/networking/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/network"
)

// The keys of the database Secret in the Profile's namespace, named as
// libpq's environment variables.
const (
	KeyHost     = "PGHOST"
	KeyPort     = "PGPORT"
	KeyDatabase = "PGDATABASE"
	KeyUser     = "PGUSER"
	KeyPassword = "PGPASSWORD"
	KeySSLMode  = "PGSSLMODE"
)

// AppName returns the app name of an instance: gitea-<instance>. It names
// the route and the NetworkPolicy, and ends the Application's name.
func AppName(instance string) string { return "gitea-" + instance }

// SecretName returns the name of an instance's database Secret.
func SecretName(instance string) string { return "gitea-" + instance + "-db" }

// Spec returns the role and database of instance in namespace ns.
func (in Instance) Spec(ns string) DatabaseSpec {
	n := Name(in.Database.NamePrefix, ns)
	return DatabaseSpec{
		Role: n, Database: n,
		Encoding: in.Database.Encoding, LCCollate: in.Database.LCCollate, LCCtype: in.Database.LCCtype,
		Template: in.Database.Template,
	}
}

// appsConfig returns the apps configuration that deploys the instances of
// c, with the database values for Profile p (nil for a sample).
func (c *Config) appsConfig(p *kubeflowv1.Profile) *apps.Config {
	ns := "profile"
	if p != nil {
		ns = plugins.Namespace(p)
	}
	out := &apps.Config{ArgoCD: c.ArgoCD, Routing: c.Routing, RootURL: c.RootURL}
	// The Profile enables instances by name; the apps plugin knows them by
	// their app's name.
	for _, n := range c.Enable {
		out.Enable = append(out.Enable, AppName(n))
	}
	for _, in := range c.instances() {
		out.Apps = append(out.Apps, in.app(ns))
	}
	return out
}

// app is the apps plugin's view of an instance in namespace ns.
func (in Instance) app(ns string) apps.App {
	src := in.Source
	h := apps.Helm{}
	if src.Helm != nil {
		h = *src.Helm
	}
	h.ValuesObject = merge(merge(h.ValuesObject, in.values(ns)), in.placementValues(h.ValuesObject))
	src.Helm = &h
	name := AppName(in.Name)
	return apps.App{
		Name:       name,
		OptInLabel: in.OptInLabel,
		Project:    in.Project,
		Source:     src,
		SyncPolicy: in.SyncPolicy,
		Route: &apps.Route{
			Prefix:            in.Prefix,
			Service:           in.Service,
			Port:              in.Port,
			DashboardRedirect: true,
		},
		NetworkPolicies: []network.Policy{in.policy(name)},
	}
}

// values are the chart values the plugin owns: the database (password from
// the Secret, never in the Application), ROOT_URL, and no admin account,
// so that no default credentials exist; the first user to sign in through
// the Kubeflow gateway, the Profile's owner, is Gitea's first admin.
func (in Instance) values(ns string) map[string]any {
	spec := in.Spec(ns)
	return map[string]any{
		"gitea": map[string]any{
			"admin": map[string]any{"username": "", "password": "", "email": "", "existingSecret": ""},
			"config": map[string]any{
				"server": map[string]any{"ROOT_URL": "{{ .AppURL }}"},
				"database": map[string]any{
					"DB_TYPE":  "postgres",
					"HOST":     net.JoinHostPort(in.Database.Host, strconv.Itoa(int(in.Database.Port))),
					"NAME":     spec.Database,
					"USER":     spec.Role,
					"SSL_MODE": in.Database.SSLMode,
				},
			},
			"additionalConfigFromEnvs": []any{
				map[string]any{
					"name": "GITEA__DATABASE__PASSWD",
					"valueFrom": map[string]any{"secretKeyRef": map[string]any{
						"name": SecretName(in.Name), "key": KeyPassword,
					}},
				},
			},
		},
		"postgresql":    map[string]any{"enabled": false},
		"postgresql-ha": map[string]any{"enabled": false},
	}
}

// merge returns base with over merged in; over wins, maps merge deeply.
func merge(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = merge(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// policy admits the ingress gateway, and nothing else, to the Gitea pods.
func (in Instance) policy(name string) network.Policy {
	port := intstr.FromInt32(int32(in.Port))
	tcp := corev1.ProtocolTCP
	return network.Policy{
		Name:        name,
		PodSelector: *in.PodSelector.DeepCopy(),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: in.Gateway.Namespace}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(in.Gateway.PodLabels)},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
		}},
	}
}

// secret is an instance's database Secret in namespace ns.
func (in Instance) secret(ns, password string) *corev1ac.SecretApplyConfiguration {
	spec := in.Spec(ns)
	return corev1ac.Secret(SecretName(in.Name), ns).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{
			KeyHost:     []byte(in.Database.Host),
			KeyPort:     []byte(strconv.Itoa(int(in.Database.Port))),
			KeyDatabase: []byte(spec.Database),
			KeyUser:     []byte(spec.Role),
			KeyPassword: []byte(password),
			KeySSLMode:  []byte(in.Database.SSLMode),
		})
}

// serviceEntry declares an external database host to the mesh.
func (in Instance) serviceEntry(ns string) *istioac.ServiceEntryApplyConfiguration {
	se := istioac.ServiceEntry(AppName(in.Name)+"-postgres", ns)
	spec := &istionetworkingv1.ServiceEntry{
		Hosts:      []string{in.Database.Host},
		Ports:      []*istionetworkingv1.ServicePort{{Number: in.Database.Port, Name: "tcp-postgres", Protocol: "TCP"}},
		Location:   istionetworkingv1.ServiceEntry_MESH_EXTERNAL,
		Resolution: istionetworkingv1.ServiceEntry_DNS,
		ExportTo:   []string{"."},
	}
	if net.ParseIP(in.Database.Host) != nil {
		spec.Addresses = []string{in.Database.Host}
		spec.Resolution = istionetworkingv1.ServiceEntry_STATIC
		spec.Endpoints = []*istionetworkingv1.WorkloadEntry{{Address: in.Database.Host}}
	}
	se.Spec = spec
	return se
}
