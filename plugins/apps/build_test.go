package apps_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/network"
)

func profile(name, owner string, labels map[string]string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: owner}},
	}
}

func TestBuildApplication(t *testing.T) {
	base := func() *apps.Config {
		c := apps.ConfigFromEnv(func(string) (string, bool) { return "", false })
		c.RootURL = "https://kf.example.org/"
		return c
	}
	tests := []struct {
		reason  string
		app     apps.App
		owner   string
		want    apps.ApplicationSpec
		wantErr string
	}{
		{
			reason: "a Git path gets the default project, the Profile's namespace and automated sync with prune and selfHeal",
			app:    apps.App{Name: "web", Source: apps.Source{RepoURL: "https://git.example.org/web.git", Path: "deploy"}},
			owner:  "alice@example.org",
			want: apps.ApplicationSpec{
				Project:     "default",
				Source:      &apps.Source{RepoURL: "https://git.example.org/web.git", Path: "deploy"},
				Destination: apps.Destination{Server: apps.DefaultServer, Namespace: "team-a"},
				SyncPolicy:  &apps.SyncPolicy{Automated: &apps.Automated{Prune: true, SelfHeal: true}},
			},
		},
		{
			reason: "placeholders fill Helm values, parameters and kustomize names; an own project and a manual sync policy are kept",
			app: apps.App{Name: "web", Project: "tenants", SyncPolicy: &apps.SyncPolicy{SyncOptions: []string{"CreateNamespace=false"}},
				Route: &apps.Route{Prefix: "w", Service: "web", Port: 80},
				Source: apps.Source{RepoURL: "https://charts.example.org", Chart: "web", TargetRevision: "1.0.0", Helm: &apps.Helm{
					ReleaseName:  "{{ .Profile }}-web",
					Parameters:   []apps.HelmParameter{{Name: "owner", Value: "{{ .Owner }}"}},
					ValuesObject: map[string]any{"url": "{{ .AppURL }}", "list": []any{"{{ .RootURL }}", 3.0}},
				}}},
			owner: "alice@example.org",
			want: apps.ApplicationSpec{
				Project: "tenants",
				Source: &apps.Source{RepoURL: "https://charts.example.org", Chart: "web", TargetRevision: "1.0.0", Helm: &apps.Helm{
					ReleaseName:  "team-a-web",
					Parameters:   []apps.HelmParameter{{Name: "owner", Value: "alice@example.org"}},
					ValuesObject: map[string]any{"url": "https://kf.example.org/w/team-a/", "list": []any{"https://kf.example.org", 3.0}},
				}},
				Destination: apps.Destination{Server: apps.DefaultServer, Namespace: "team-a"},
				SyncPolicy:  &apps.SyncPolicy{SyncOptions: []string{"CreateNamespace=false"}},
			},
		},
		{
			reason: "an owner name that would add --set values is refused",
			app: apps.App{Name: "web", Source: apps.Source{RepoURL: "https://charts.example.org", Chart: "web", Helm: &apps.Helm{
				Parameters: []apps.HelmParameter{{Name: "owner", Value: "{{ .Owner }}"}},
			}}},
			owner:   "mallory,image.repository=evil",
			wantErr: "Helm's --set syntax",
		},
		{
			reason: "the same owner name is harmless in a values object",
			app: apps.App{Name: "web", Source: apps.Source{RepoURL: "https://charts.example.org", Chart: "web", Helm: &apps.Helm{
				ValuesObject: map[string]any{"owner": "{{ .Owner }}"},
			}}},
			owner: "mallory,image.repository=evil",
			want: apps.ApplicationSpec{
				Project: "default",
				Source: &apps.Source{RepoURL: "https://charts.example.org", Chart: "web", Helm: &apps.Helm{
					ValuesObject: map[string]any{"owner": "mallory,image.repository=evil"},
				}},
				Destination: apps.Destination{Server: apps.DefaultServer, Namespace: "team-a"},
				SyncPolicy:  apps.DefaultSyncPolicy(),
			},
		},
		{
			reason: "placeholders fill Jsonnet's variables and arguments that are not code",
			app: apps.App{Name: "web", Source: apps.Source{RepoURL: "https://git.example.org/web.git", Path: "jsonnet", Directory: &apps.Directory{
				Jsonnet: &apps.Jsonnet{
					ExtVars: []apps.JsonnetVar{{Name: "ns", Value: "{{ .Namespace }}"}},
					TLAs:    []apps.JsonnetVar{{Name: "owner", Value: "{{ .Owner }}"}, {Name: "n", Value: "3", Code: true}},
				},
			}}},
			owner: "alice@example.org",
			want: apps.ApplicationSpec{
				Project: "default",
				Source: &apps.Source{RepoURL: "https://git.example.org/web.git", Path: "jsonnet", Directory: &apps.Directory{
					Jsonnet: &apps.Jsonnet{
						ExtVars: []apps.JsonnetVar{{Name: "ns", Value: "team-a"}},
						TLAs:    []apps.JsonnetVar{{Name: "owner", Value: "alice@example.org"}, {Name: "n", Value: "3", Code: true}},
					},
				}},
				Destination: apps.Destination{Server: apps.DefaultServer, Namespace: "team-a"},
				SyncPolicy:  apps.DefaultSyncPolicy(),
			},
		},
		{
			reason: "placeholders fill kustomize's names, labels and annotations",
			app: apps.App{Name: "web", Source: apps.Source{RepoURL: "https://git.example.org/web.git", Path: "overlay", Kustomize: &apps.Kustomize{
				NamePrefix: "{{ .Profile }}-", NameSuffix: "-x", CommonLabels: map[string]string{"team": "{{ .Profile }}"},
				CommonAnnotations: map[string]string{"owner": "{{ .Owner }}"},
			}}},
			owner: "alice@example.org",
			want: apps.ApplicationSpec{
				Project: "default",
				Source: &apps.Source{RepoURL: "https://git.example.org/web.git", Path: "overlay", Kustomize: &apps.Kustomize{
					NamePrefix: "team-a-", NameSuffix: "-x", CommonLabels: map[string]string{"team": "team-a"},
					CommonAnnotations: map[string]string{"owner": "alice@example.org"},
				}},
				Destination: apps.Destination{Server: apps.DefaultServer, Namespace: "team-a"},
				SyncPolicy:  apps.DefaultSyncPolicy(),
			},
		},
		{
			reason: "a directory without Jsonnet is kept as it is",
			app:    apps.App{Name: "web", Source: apps.Source{RepoURL: "https://git.example.org/web.git", Path: "manifests", Directory: &apps.Directory{Recurse: true}}},
			owner:  "alice@example.org",
			want: apps.ApplicationSpec{
				Project:     "default",
				Source:      &apps.Source{RepoURL: "https://git.example.org/web.git", Path: "manifests", Directory: &apps.Directory{Recurse: true}},
				Destination: apps.Destination{Server: apps.DefaultServer, Namespace: "team-a"},
				SyncPolicy:  apps.DefaultSyncPolicy(),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := base()
			cfg.Apps = []apps.App{tc.app}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}
			d, err := apps.Build(cfg, profile("team-a", tc.owner, nil), cfg.Apps, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := d.Applications[0]
			if a.Metadata.Name != "team-a.web" || a.Metadata.Namespace != apps.DefaultArgoCDNamespace {
				t.Errorf("Application %s/%s", a.Metadata.Namespace, a.Metadata.Name)
			}
			if d := cmp.Diff(tc.want, a.Spec); d != "" {
				t.Errorf("spec (-want +got):\n%s", d)
			}
		})
	}
}

func TestBuildKeepsTheFirstReleasesName(t *testing.T) {
	cfg := apps.ConfigFromEnv(func(string) (string, bool) { return "", false })
	cfg.Apps = []apps.App{
		{Name: "web", Source: apps.Source{RepoURL: "https://git.example.org/web.git", Path: "deploy"}},
		{Name: "docs", Source: apps.Source{RepoURL: "https://git.example.org/docs.git", Path: "deploy"}},
	}
	d, err := apps.Build(cfg, profile("team-a", "alice@example.org", nil), cfg.Apps, apps.Kept{"web": "team-a-web"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range d.Applications {
		got = append(got, a.Metadata.Name)
	}
	if d := cmp.Diff([]string{"team-a-web", "team-a.docs"}, got); d != "" {
		t.Errorf("Application names (-want +got):\n%s", d)
	}
}

func TestValidate(t *testing.T) {
	good := apps.App{Name: "web", Source: apps.Source{RepoURL: "https://git.example.org/web.git", Path: "deploy"}}
	tests := []struct {
		reason  string
		mutate  func(c *apps.Config)
		wantErr string
	}{
		{reason: "a valid config passes", mutate: func(*apps.Config) {}},
		{reason: "enable names a declared app", mutate: func(c *apps.Config) { c.Enable = []string{"nope"} }, wantErr: `enable[0] "nope": no such app (known: web)`},
		{reason: "an unknown placeholder is named with its field", mutate: func(c *apps.Config) {
			c.Apps[0].Source.Helm = &apps.Helm{ReleaseName: "{{ .Team }}"}
		}, wantErr: `apps[web]: source: helm.releaseName: "{{ .Team }}": unknown placeholder`},
		{reason: "AppURL needs a route", mutate: func(c *apps.Config) {
			c.RootURL = "https://kf.example.org"
			c.Apps[0].Source.Helm = &apps.Helm{ValuesObject: map[string]any{"u": "{{ .AppURL }}"}}
		}, wantErr: "which needs a route"},
		{reason: "a path and a chart together are refused", mutate: func(c *apps.Config) { c.Apps[0].Source.Chart = "web" }, wantErr: "exactly one of path and chart"},
		{reason: "the Argo CD namespace is a DNS label", mutate: func(c *apps.Config) { c.ArgoCD.Namespace = "Argo CD" }, wantErr: `argocd.namespace "Argo CD"`},
		{reason: "an opt-in label is a label key", mutate: func(c *apps.Config) { c.Apps[0].OptInLabel = "not a key" }, wantErr: `optInLabel "not a key"`},
		{reason: "an http root URL passes", mutate: func(c *apps.Config) { c.RootURL = "http://kf.example.org" }},
		{reason: "a root URL of another scheme is refused", mutate: func(c *apps.Config) { c.RootURL = "ftp://kf.example.org" }, wantErr: `rootURL "ftp://kf.example.org": not an http(s) URL`},
		{reason: "a root URL without a host is refused", mutate: func(c *apps.Config) { c.RootURL = "https:///kubeflow" }, wantErr: `rootURL "https:///kubeflow": not an http(s) URL`},
		{reason: "two routes of one prefix are refused", mutate: func(c *apps.Config) {
			c.Apps[0].Route = &apps.Route{Service: "web", Port: 80}
			c.Apps = append(c.Apps, apps.App{Name: "web2", Source: good.Source, Route: &apps.Route{Prefix: "web", Service: "web2", Port: 80}})
		}, wantErr: `apps[web2]: route prefix "web" is used twice`},
		{reason: "the highest port is a port", mutate: func(c *apps.Config) { c.Apps[0].Route = &apps.Route{Service: "web", Port: 65535} }},
		{reason: "a port above the highest is refused", mutate: func(c *apps.Config) { c.Apps[0].Route = &apps.Route{Service: "web", Port: 65536} }, wantErr: "route.port 65536 is not between 1 and 65535"},
		{reason: "kustomize and a directory together are refused", mutate: func(c *apps.Config) {
			c.Apps[0].Source.Kustomize = &apps.Kustomize{NamePrefix: "t-"}
			c.Apps[0].Source.Directory = &apps.Directory{Recurse: true}
		}, wantErr: "source: at most one of helm, kustomize and directory"},
		{reason: "a chart takes helm options only", mutate: func(c *apps.Config) {
			c.Apps[0].Source.Path, c.Apps[0].Source.Chart = "", "web"
			c.Apps[0].Source.Directory = &apps.Directory{Recurse: true}
		}, wantErr: "source: a chart takes helm options only"},
		{reason: "a Jsonnet variable's placeholders are checked", mutate: func(c *apps.Config) {
			c.Apps[0].Source.Directory = &apps.Directory{Jsonnet: &apps.Jsonnet{ExtVars: []apps.JsonnetVar{{Name: "x", Value: "{{ .Team }}"}}}}
		}, wantErr: `apps[web]: source: directory.jsonnet.extVars[0].value: "{{ .Team }}": unknown placeholder`},
		{reason: "a path takes directory options", mutate: func(c *apps.Config) { c.Apps[0].Source.Directory = &apps.Directory{Recurse: true} }},
		{reason: "a retry's backoff is in durations", mutate: func(c *apps.Config) {
			c.Apps[0].SyncPolicy = &apps.SyncPolicy{Retry: &apps.Retry{Limit: 3, Backoff: &apps.Backoff{Duration: "5s", MaxDuration: "soon"}}}
		}, wantErr: `syncPolicy: retry.backoff.maxDuration "soon"`},
		{reason: "a retry without a backoff passes", mutate: func(c *apps.Config) {
			c.Apps[0].SyncPolicy = &apps.SyncPolicy{Retry: &apps.Retry{Limit: 3}}
		}},
		{reason: "what only a build finds is refused when the config loads", mutate: func(c *apps.Config) {
			c.RootURL = "https://kf.example.org/a,b"
			c.Apps[0].Source.Helm = &apps.Helm{Parameters: []apps.HelmParameter{{Name: "url", Value: "{{ .RootURL }}"}}}
		}, wantErr: `helm.parameters[url]: {{ .RootURL }} is "https://kf.example.org/a,b"`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			c := apps.ConfigFromEnv(func(string) (string, bool) { return "", false })
			c.Apps = []apps.App{good}
			c.Apps[0].Source = good.Source
			tc.mutate(c)
			err := c.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.wantErr == "" && got != "" || !strings.Contains(got, tc.wantErr) {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
		})
	}
}

func TestApp(t *testing.T) {
	cfg := apps.ConfigFromEnv(func(string) (string, bool) { return "", false })
	cfg.Apps = []apps.App{{Name: "web"}, {Name: "docs"}}
	for _, name := range []string{"web", "docs"} {
		if a, ok := cfg.App(name); !ok || a.Name != name {
			t.Errorf("App(%s) = %q, %v; want %[1]s, true", name, a.Name, ok)
		}
	}
	if a, ok := cfg.App("wiki"); ok || a.Name != "" {
		t.Errorf("App(wiki) = %q, %v; want nothing", a.Name, ok)
	}
}

func TestObjectsListApplicationsFirst(t *testing.T) {
	cfg := apps.ConfigFromEnv(func(string) (string, bool) { return "", false })
	pol := func(name string) network.Policy {
		return network.Policy{Name: name, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}
	}
	cfg.Apps = []apps.App{{
		Name:            "web",
		Source:          apps.Source{RepoURL: "https://git.example.org/web.git", Path: "deploy"},
		NetworkPolicies: []network.Policy{pol("web-in"), pol("web-metrics")},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := apps.Build(cfg, profile("team-a", "alice@example.org", nil), cfg.Apps, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range d.Objects() {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		got = append(got, obj.GetKind()+" "+obj.GetName())
	}
	want := []string{"Application team-a.web", "NetworkPolicy web-in", "NetworkPolicy web-metrics"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
}
