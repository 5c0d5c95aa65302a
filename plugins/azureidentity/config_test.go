package azureidentity_test

import (
	"testing"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/internal/identities"
)

func TestConfigValidate(t *testing.T) {
	const id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ml/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a"
	testhost.CheckValidate(t, azureidentity.NewConfig, []testhost.ConfigCase[*azureidentity.Config]{
		{Name: "the defaults", Edit: func(*azureidentity.Config) {}},
		{Name: "an identity, its client and tenant", Edit: func(c *azureidentity.Config) {
			c.Identity, c.ClientID, c.TenantID = id, "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-aaaaaaaaaaaa"
		}},
		{Name: "an identity that is not one's resource ID", Edit: func(c *azureidentity.Config) { c.Identity = "team-a" }, Want: `"team-a"`},
		{Name: "a client ID that is not a GUID", Edit: func(c *azureidentity.Config) { c.ClientID = "team-a" }, Want: `clientId "team-a": not a GUID`},
		{Name: "a tenant ID that is not a GUID", Edit: func(c *azureidentity.Config) { c.TenantID = "team-a" }, Want: `tenantId "team-a": not a GUID`},
		{Name: "a service account that is not a name", Edit: func(c *azureidentity.Config) { c.ServiceAccounts = []string{"Editor!"} }, Want: `serviceAccounts[0] "Editor!"`},
		{Name: "an https issuer", Edit: func(c *azureidentity.Config) { c.Issuer = "https://oidc.example.org/cluster" }},
		{Name: "an http issuer", Edit: func(c *azureidentity.Config) { c.Issuer = "http://oidc.example.org/cluster" }, Want: "want an https URL"},
		{Name: "no audience", Edit: func(c *azureidentity.Config) { c.Audience = "" }, Want: "audience: must not be empty"},
		{Name: "an allowance", Edit: func(c *azureidentity.Config) {
			c.AllowedIdentities = identities.Policy{{Identity: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ml/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{{ .Namespace }}"}}
		}},
		{Name: "an allowance without an identity or a tag", Edit: func(c *azureidentity.Config) { c.AllowedIdentities = identities.Policy{{}} }, Want: "allowedIdentities[0].identity: required"},
	})
}
