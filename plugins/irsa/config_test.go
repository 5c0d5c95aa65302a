package irsa_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/irsa"
)

func TestConfigValidate(t *testing.T) {
	testhost.CheckValidate(t, irsa.NewConfig, []testhost.ConfigCase[*irsa.Config]{
		{Name: "the defaults", Edit: func(*irsa.Config) {}},
		{Name: "exact subjects", Edit: func(c *irsa.Config) { c.Subjects = irsa.SubjectsExact }},
		{Name: "wildcard subjects", Edit: func(c *irsa.Config) { c.Subjects = irsa.SubjectsWildcard }},
		{Name: "subjects of another form", Edit: func(c *irsa.Config) { c.Subjects = "any" }, Want: `subjects "any": want exact or wildcard`},
		{Name: "the default policy size (0)", Edit: func(c *irsa.Config) { c.MaxPolicySize = 0 }},
		{Name: "a policy size of 1", Edit: func(c *irsa.Config) { c.MaxPolicySize = 1 }},
		{Name: "a negative policy size", Edit: func(c *irsa.Config) { c.MaxPolicySize = -1 }, Want: "maxPolicySize -1: must not be negative"},
		{Name: "an allowance", Edit: func(c *irsa.Config) {
			c.AllowedIdentities = identities.Policy{{Identity: "arn:aws:iam::111122223333:role/kf-{{ .Namespace }}"}}
		}},
		{Name: "an allowance without an identity or a tag", Edit: func(c *irsa.Config) { c.AllowedIdentities = identities.Policy{{}} }, Want: "allowedIdentities[0].identity: required"},
		{Name: "no audience", Edit: func(c *irsa.Config) { c.Audience = "" }, Want: "audience: must not be empty"},
		{Name: "a service account that is not a name", Edit: func(c *irsa.Config) { c.ServiceAccounts = []string{"Editor!"} }, Want: `serviceAccounts[0] "Editor!"`},
	})
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
