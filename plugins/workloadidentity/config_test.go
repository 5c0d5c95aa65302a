package workloadidentity_test

import (
	"testing"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/internal/identities"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

func TestConfigValidate(t *testing.T) {
	testhost.CheckValidate(t, workloadidentity.NewConfig, []testhost.ConfigCase[*workloadidentity.Config]{
		{Name: "the defaults", Edit: func(*workloadidentity.Config) {}},
		{Name: "an account and its pool", Edit: func(c *workloadidentity.Config) {
			c.GCPServiceAccount, c.WorkloadPool = "runner@ml-prod.iam.gserviceaccount.com", "ml-prod.svc.id.goog"
		}},
		{Name: "an account that is not an email of one", Edit: func(c *workloadidentity.Config) { c.GCPServiceAccount = "runner@ml-prod" }, Want: "runner@ml-prod"},
		{Name: "a pool of another form", Edit: func(c *workloadidentity.Config) { c.WorkloadPool = "ml-prod" }, Want: `workloadPool "ml-prod": want <project>.svc.id.goog`},
		{Name: "a service account that is not a name", Edit: func(c *workloadidentity.Config) { c.ServiceAccounts = []string{"Editor!"} }, Want: `serviceAccounts[0] "Editor!"`},
		{Name: "an allowance", Edit: func(c *workloadidentity.Config) {
			c.AllowedIdentities = identities.Policy{{Identity: "{{ .Namespace }}@ml-prod.iam.gserviceaccount.com"}}
		}},
		{Name: "an allowance without an identity or a tag", Edit: func(c *workloadidentity.Config) { c.AllowedIdentities = identities.Policy{{}} }, Want: "allowedIdentities[0].identity: required"},
		{Name: "an allowance by tag", Edit: func(c *workloadidentity.Config) {
			c.AllowedIdentities = identities.Policy{{Tag: &identities.Tag{Key: "team", Value: "{{ .Namespace }}"}}}
		}, Want: "allowedIdentities[0].tag: the plugin reads no tags"},
	})
}
