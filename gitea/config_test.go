package gitea_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := func() *gitea.Config {
		c := gitea.ConfigFromEnv(func(string) (string, bool) { return "", false })
		c.RootURL = "https://kf.example.org"
		c.Instances = []gitea.Instance{{
			Name:   "unclassified",
			Source: apps.Source{RepoURL: "https://dl.gitea.com/charts/", Chart: "gitea"},
			Database: gitea.Database{
				Host:       "pg.example.net",
				AdminDSN:   gitea.SecretKey{Namespace: "profilekit-system", Name: "pg-admin"},
				CA:         &gitea.SecretKey{Namespace: "profilekit-system", Name: "pg-ca"},
				NamePrefix: "gitea_",
			},
		}}
		return c
	}
	tests := []struct {
		reason  string
		mutate  func(c *gitea.Config)
		wantErr string
	}{
		{reason: "the defaults with a server, DSN and CA pass", mutate: func(*gitea.Config) {}},
		{reason: "verify-full needs a CA", mutate: func(c *gitea.Config) { c.Instances[0].Database.CA = nil },
			wantErr: "instances[unclassified].database: ca: required with sslMode verify-full"},
		{reason: "plain text only by name, other modes are refused", mutate: func(c *gitea.Config) { c.Instances[0].Database.SSLMode = "prefer" },
			wantErr: `sslMode "prefer": want verify-full or disable`},
		{reason: "plain text when the host says so needs no CA", mutate: func(c *gitea.Config) {
			c.Instances[0].Database.SSLMode = gitea.SSLDisable
			c.Instances[0].Database.CA = nil
		}},
		{reason: "a locale that is not a plain name is refused before it reaches SQL", mutate: func(c *gitea.Config) { c.Instances[0].Database.LCCollate = "en_US'; DROP" },
			wantErr: `lcCollate "en_US'; DROP"`},
		{reason: "two instances on one server need different name prefixes", mutate: func(c *gitea.Config) {
			b := c.Instances[0]
			b.Name = "protected-b"
			c.Instances = append(c.Instances, b)
		}, wantErr: "role and database names would collide"},
		{reason: "an empty name prefix would name roles after namespaces alone, such as postgres", mutate: func(c *gitea.Config) { c.Instances[0].Database.NamePrefix = "" },
			wantErr: `namePrefix "": required`},
		{reason: "a name prefix that could continue a namespace is refused", mutate: func(c *gitea.Config) { c.Instances[0].Database.NamePrefix = "gitea-" },
			wantErr: `namePrefix "gitea-": want a lower-case letter, then letters, digits, _ or -, ending with _`},
		{reason: "a name prefix in upper case is refused, PostgreSQL folds unquoted names", mutate: func(c *gitea.Config) { c.Instances[0].Database.NamePrefix = "Gitea_" },
			wantErr: `namePrefix "Gitea_"`},
		{reason: "one prefix starting another on one server could give one name twice", mutate: func(c *gitea.Config) {
			b := c.Instances[0]
			b.Name = "protected-b"
			b.Database.NamePrefix = "gitea_pb_"
			c.Instances = append(c.Instances, b)
		}, wantErr: `instances[protected-b]: database pg.example.net:5432 with namePrefix "gitea_pb_" starts with instance unclassified's "gitea_": role and database names would collide`},
		{reason: "two prefixes of which neither starts the other share a server", mutate: func(c *gitea.Config) {
			b := c.Instances[0]
			b.Name = "protected-b"
			b.Database.NamePrefix = "giteapb_"
			c.Instances = append(c.Instances, b)
		}},
		{reason: "a root URL is required, Gitea's ROOT_URL comes from it", mutate: func(c *gitea.Config) { c.RootURL = "" },
			wantErr: "rootURL: required"},
		{reason: "enable names a declared instance", mutate: func(c *gitea.Config) { c.Enable = []string{"secret"} },
			wantErr: `enable[0] "secret": no such instance`},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			c := valid()
			tc.mutate(c)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if (tc.wantErr == "") != (got == "") || !strings.Contains(got, tc.wantErr) {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
		})
	}
}

// TestProfileCannotSetAdopt: adoption takes over a role and database the
// plugin did not make; only the host may turn it on. A Profile's spec that
// names instances (and so database.adopt) is refused.
func TestProfileCannotSetAdopt(t *testing.T) {
	t.Parallel()
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
			TypeMeta: metav1.TypeMeta{Kind: gitea.Kind},
			Spec:     &runtime.RawExtension{Raw: []byte(`{"instances": [{"name": "unclassified", "database": {"adopt": true}}]}`)},
		}}},
	}
	_, err := gitea.Definition().Decode(nil, p)
	if err == nil || !plugins.IsTerminal(err) || !strings.Contains(err.Error(), `field "instances" is set by the host only`) {
		t.Errorf("a Profile's spec that sets database.adopt: %v, want a terminal refusal of instances", err)
	}
}
