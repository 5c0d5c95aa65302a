package apps

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	istioac "istio.io/client-go/pkg/applyconfiguration/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/expose"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// ApplicationKind is Argo CD's Application.
var ApplicationKind = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// ResourcesFinalizer makes Argo CD delete what an Application deployed
// before the Application itself goes.
const ResourcesFinalizer = "resources-finalizer.argocd.argoproj.io"

// Application is the part of an Argo CD Application the plugin owns.
type Application struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        ApplicationMeta `json:"metadata"`
	Spec            ApplicationSpec `json:"spec"`
}

// ApplicationMeta is the Application's name, namespace and finalizers.
type ApplicationMeta struct {
	Name       string   `json:"name"`
	Namespace  string   `json:"namespace"`
	Finalizers []string `json:"finalizers,omitempty"`
}

// ApplicationSpec is an Application's spec.
type ApplicationSpec struct {
	Project     string      `json:"project"`
	Source      *Source     `json:"source"`
	Destination Destination `json:"destination"`
	SyncPolicy  *SyncPolicy `json:"syncPolicy,omitempty"`
}

// Destination is where Argo CD deploys: the Profile's namespace.
type Destination struct {
	Server    string `json:"server"`
	Namespace string `json:"namespace"`
}

// Desired is what one Profile's apps need.
type Desired struct {
	Applications []*Application
	Routes       []*istioac.VirtualServiceApplyConfiguration
	Policies     []*networkingv1ac.NetworkPolicyApplyConfiguration
}

// Choice is whether a Profile wants one app, and why.
type Choice struct {
	App App
	On  bool
	// Invalid names a label whose value is not a boolean; the app then
	// stays as it is.
	Invalid error
}

// Choose returns, for every declared app in order, whether p wants it: it
// is in the config's Enable list, or p carries its opt-in label set to a
// true value.
func Choose(cfg *Config, p *kubeflowv1.Profile) []Choice {
	out := make([]Choice, 0, len(cfg.Apps))
	for _, a := range cfg.Apps {
		c := Choice{App: a, On: slices.Contains(cfg.Enable, a.Name)}
		if !c.On && a.OptInLabel != "" {
			if v, set := p.Labels[a.OptInLabel]; set {
				on, err := strconv.ParseBool(v)
				if err != nil {
					c.Invalid = plugins.Terminalf(plugins.ReasonInvalidLabel, "label %s=%q is not true or false, so app %s stays as it is", a.OptInLabel, v, a.Name)
				}
				c.On = on
			}
		}
		out = append(out, c)
	}
	return out
}

// Build returns the Application, route and policies of each app in apps for
// Profile p, the Applications named by kept (see KeptNames). Input that
// cannot be built is a terminal InvalidSpec error.
func Build(cfg *Config, p *kubeflowv1.Profile, apps []App, kept Kept) (Desired, error) {
	d, err := build(cfg, p, apps, kept)
	if err != nil {
		return Desired{}, plugins.Terminal(plugins.ReasonInvalidSpec, fmt.Errorf("plugin %s: %w", Kind, err))
	}
	return d, nil
}

func build(cfg *Config, p *kubeflowv1.Profile, apps []App, kept Kept) (Desired, error) {
	var d Desired
	var errs []error
	for _, a := range apps {
		app, err := application(cfg, p, a, kept.Name(plugins.Namespace(p), a.Name))
		if err != nil {
			errs = append(errs, fmt.Errorf("apps[%s]: %w", a.Name, err))
			continue
		}
		d.Applications = append(d.Applications, app)
		if a.Route != nil {
			vss, err := expose.Build(&expose.Config{
				Gateways:      cfg.Routing.Gateways,
				Hosts:         cfg.Routing.Hosts,
				ClusterDomain: cfg.Routing.ClusterDomain,
				Apps: []expose.App{{
					Name:              a.Name,
					Prefix:            a.prefix(),
					Service:           a.Route.Service,
					Port:              a.Route.Port,
					RewriteToRoot:     a.Route.RewriteToRoot,
					DashboardRedirect: a.Route.DashboardRedirect,
				}},
			}, p)
			if err != nil {
				errs = append(errs, fmt.Errorf("apps[%s].route: %w", a.Name, err))
				continue
			}
			d.Routes = append(d.Routes, vss...)
		}
		if len(a.NetworkPolicies) > 0 {
			nd, err := network.Build(&network.Config{Policies: a.NetworkPolicies}, p)
			if err != nil {
				errs = append(errs, fmt.Errorf("apps[%s].networkPolicies: %w", a.Name, err))
				continue
			}
			d.Policies = append(d.Policies, nd.Policies...)
		}
	}
	return d, errors.Join(errs...)
}

func application(cfg *Config, p *kubeflowv1.Profile, a App, name string) (*Application, error) {
	ns := plugins.Namespace(p)
	vals := Values{Values: placeholders.Of(p), RootURL: strings.TrimSuffix(cfg.RootURL, "/")}
	vals.AppURL = vals.RootURL + a.PathPrefix(ns)
	src, err := expandSource(a.Source, vals)
	if err != nil {
		return nil, err
	}
	project := cfg.ArgoCD.Project
	if a.Project != "" {
		project = a.Project
	}
	sp := a.SyncPolicy
	if sp == nil {
		sp = DefaultSyncPolicy()
	}
	return &Application{
		TypeMeta: metav1.TypeMeta{APIVersion: ApplicationKind.GroupVersion().String(), Kind: ApplicationKind.Kind},
		Metadata: ApplicationMeta{
			Name:       name,
			Namespace:  cfg.ArgoCD.Namespace,
			Finalizers: []string{ResourcesFinalizer},
		},
		Spec: ApplicationSpec{
			Project:     project,
			Source:      src,
			Destination: Destination{Server: cfg.ArgoCD.Server, Namespace: ns},
			SyncPolicy:  sp,
		},
	}, nil
}

// helmSpecial are the characters that Helm's --set syntax gives a meaning.
const helmSpecial = ",{}[]\\=\n"

// expandSource returns a copy of s with the placeholders expanded. A Helm
// parameter whose substituted values bring in characters of Helm's --set
// syntax is refused, so that a Profile's owner name cannot set other values.
func expandSource(s Source, v Values) (*Source, error) {
	out := s
	if h := s.Helm; h != nil {
		hc := *h
		hc.ReleaseName = Expand(h.ReleaseName, v)
		hc.ValueFiles = slices.Clone(h.ValueFiles)
		hc.Parameters = make([]HelmParameter, len(h.Parameters))
		for i, p := range h.Parameters {
			val := Expand(p.Value, v)
			for _, sub := range []struct{ name, value string }{
				{placeholders.Namespace, v.Namespace}, {placeholders.Profile, v.Profile}, {placeholders.Owner, v.Owner},
				{PlaceholderRootURL, v.RootURL}, {PlaceholderAppURL, v.AppURL},
			} {
				if placeholders.Uses(p.Value, sub.name) && strings.ContainsAny(sub.value, helmSpecial) {
					return nil, fmt.Errorf("helm.parameters[%s]: {{ .%s }} is %q, which has a character that Helm's --set syntax gives a meaning", p.Name, sub.name, sub.value)
				}
			}
			hc.Parameters[i] = HelmParameter{Name: p.Name, Value: val, ForceString: p.ForceString}
		}
		if len(hc.Parameters) == 0 {
			hc.Parameters = nil
		}
		if h.ValuesObject != nil {
			hc.ValuesObject, _ = expandAny(h.ValuesObject, v).(map[string]any)
		}
		out.Helm = &hc
	}
	if k := s.Kustomize; k != nil {
		kc := *k
		kc.NamePrefix = Expand(k.NamePrefix, v)
		kc.NameSuffix = Expand(k.NameSuffix, v)
		kc.CommonLabels = expandMap(k.CommonLabels, v)
		kc.CommonAnnotations = expandMap(k.CommonAnnotations, v)
		out.Kustomize = &kc
	}
	if d := s.Directory; d != nil {
		dc := *d
		if d.Jsonnet != nil {
			j := *d.Jsonnet
			j.ExtVars = expandVars(d.Jsonnet.ExtVars, v)
			j.TLAs = expandVars(d.Jsonnet.TLAs, v)
			dc.Jsonnet = &j
		}
		out.Directory = &dc
	}
	return &out, nil
}

func expandMap(m map[string]string, v Values) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		out[k] = Expand(val, v)
	}
	return out
}

func expandVars(vars []JsonnetVar, v Values) []JsonnetVar {
	if vars == nil {
		return nil
	}
	out := make([]JsonnetVar, len(vars))
	for i, jv := range vars {
		out[i] = jv
		if !jv.Code {
			out[i].Value = Expand(jv.Value, v)
		}
	}
	return out
}

func sampleProfile() *kubeflowv1.Profile {
	p := &kubeflowv1.Profile{}
	p.Name = "profile"
	p.Spec.Owner = rbacv1.Subject{Kind: rbacv1.UserKind, Name: "owner@example.org"}
	return p
}
