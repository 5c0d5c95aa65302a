package apps_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/apps"
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
