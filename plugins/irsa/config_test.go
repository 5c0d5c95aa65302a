package irsa_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/irsa"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*irsa.Config)
		want string // a part of the error; "" for none
	}{
		{"the defaults", func(*irsa.Config) {}, ""},
		{"exact subjects", func(c *irsa.Config) { c.Subjects = irsa.SubjectsExact }, ""},
		{"wildcard subjects", func(c *irsa.Config) { c.Subjects = irsa.SubjectsWildcard }, ""},
		{"subjects of another form", func(c *irsa.Config) { c.Subjects = "any" }, `subjects "any": want exact or wildcard`},
		{"the default policy size (0)", func(c *irsa.Config) { c.MaxPolicySize = 0 }, ""},
		{"a policy size of 1", func(c *irsa.Config) { c.MaxPolicySize = 1 }, ""},
		{"a negative policy size", func(c *irsa.Config) { c.MaxPolicySize = -1 }, "maxPolicySize -1: must not be negative"},
		{"an allowance", func(c *irsa.Config) {
			c.AllowedIdentities = identities.Policy{{Identity: "arn:aws:iam::111122223333:role/kf-{{ .Namespace }}"}}
		}, ""},
		{"an allowance without an identity or a tag", func(c *irsa.Config) { c.AllowedIdentities = identities.Policy{{}} }, "allowedIdentities[0].identity: required"},
		{"no audience", func(c *irsa.Config) { c.Audience = "" }, "audience: must not be empty"},
		{"a service account that is not a name", func(c *irsa.Config) { c.ServiceAccounts = []string{"Editor!"} }, `serviceAccounts[0] "Editor!"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := irsa.NewConfig()
			c.edit(cfg)
			err := cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Validate: %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Validate: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// The default IAM loads the AWS configuration on first use: a
// configuration that does not load is each call's error, never a panic.
func TestDefaultIAMWithoutConfiguration(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_PROFILE", "no-such-profile")
	c := irsa.DefaultIAM()
	ctx := t.Context()
	_, errTrust := c.TrustPolicy(ctx, "kf-team")
	errSet := c.SetTrustPolicy(ctx, "kf-team", "{}")
	_, errTags := c.RoleTags(ctx, "kf-team")
	for call, err := range map[string]error{"TrustPolicy": errTrust, "SetTrustPolicy": errSet, "RoleTags": errTags} {
		if err == nil || !strings.Contains(err.Error(), "AWS configuration") || !strings.Contains(err.Error(), "no-such-profile") {
			t.Errorf("%s: %v, want the AWS configuration's error naming the profile", call, err)
		}
	}
}
