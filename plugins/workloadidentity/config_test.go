package workloadidentity_test

import (
	"strings"
	"testing"

	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*workloadidentity.Config)
		want string // a part of the error; "" for none
	}{
		{"the defaults", func(*workloadidentity.Config) {}, ""},
		{"an account and its pool", func(c *workloadidentity.Config) {
			c.GCPServiceAccount, c.WorkloadPool = "runner@ml-prod.iam.gserviceaccount.com", "ml-prod.svc.id.goog"
		}, ""},
		{"an account that is not an email of one", func(c *workloadidentity.Config) { c.GCPServiceAccount = "runner@ml-prod" }, "runner@ml-prod"},
		{"a pool of another form", func(c *workloadidentity.Config) { c.WorkloadPool = "ml-prod" }, `workloadPool "ml-prod": want <project>.svc.id.goog`},
		{"a service account that is not a name", func(c *workloadidentity.Config) { c.ServiceAccounts = []string{"Editor!"} }, `serviceAccounts[0] "Editor!"`},
		{"an allowance", func(c *workloadidentity.Config) {
			c.AllowedIdentities = identities.Policy{{Identity: "{{ .Namespace }}@ml-prod.iam.gserviceaccount.com"}}
		}, ""},
		{"an allowance without an identity or a tag", func(c *workloadidentity.Config) { c.AllowedIdentities = identities.Policy{{}} }, "allowedIdentities[0].identity: required"},
		{"an allowance by tag", func(c *workloadidentity.Config) {
			c.AllowedIdentities = identities.Policy{{Tag: &identities.Tag{Key: "team", Value: "{{ .Namespace }}"}}}
		}, "allowedIdentities[0].tag: the plugin reads no tags"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := workloadidentity.NewConfig()
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
