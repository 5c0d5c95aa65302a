package fakecloud

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// AzureAudience is the token audience of the server's cloud configuration.
const AzureAudience = "https://management.fakecloud.test"

// AzureToken is the bearer token that AzureCredential gives and the server
// takes.
const AzureToken = "fakecloud-arm-token"

// azureAPIVersions are the api-version values of the managed identity API
// the server accepts.
var azureAPIVersions = []string{"2023-01-31", "2023-07-31-preview", "2024-11-30"}

// AzureCredential is a federated identity credential as the server holds it.
type AzureCredential struct {
	Issuer    string   `json:"issuer"`
	Subject   string   `json:"subject"`
	Audiences []string `json:"audiences"`
}

// Azure serves the federated identity credentials of user-assigned managed
// identities in Azure Resource Manager's REST protocol, as the armmsi client
// sends them, over TLS:
//
//	PUT    /subscriptions/<s>/resourceGroups/<g>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<i>/federatedIdentityCredentials/<c>?api-version=...
//	GET    (the same)
//	DELETE (the same)
//	GET    /subscriptions/<s>/resourceGroups/<g>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<i>?api-version=...
//
// The last answers the identity itself with its resource tags.
// Like ARM, it matches the path's fixed segments and names without regard to
// case, needs a known api-version (400 otherwise) and a bearer token (401),
// answers 404 ResourceNotFound for an identity it does not hold and 404
// NotFound for a missing credential, 201 for a created credential and 200
// for a replaced one, and 200 for a deleted credential and 204 for one that
// did not exist. A credential needs a name of 3 to 120 letters, digits,
// hyphens and underscores, an https issuer, a subject and one audience.
type Azure struct {
	server

	mu         sync.Mutex
	identities map[string]map[string]AzureCredential // by lower-case sub/group/identity, then lower-case name
	tags       map[string]map[string]string          // by lower-case sub/group/identity
}

// NewAzure starts an Azure Resource Manager server that holds no identity.
// Point the client at it with ClientOptions.
func NewAzure(t testing.TB) *Azure {
	a := &Azure{identities: map[string]map[string]AzureCredential{}, tags: map[string]map[string]string{}}
	a.start(t, a, true)
	return a
}

// Cloud returns a cloud configuration whose Resource Manager is the server.
func (a *Azure) Cloud() cloud.Configuration {
	return cloud.Configuration{
		ActiveDirectoryAuthorityHost: a.URL + "/",
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Audience: AzureAudience, Endpoint: a.URL},
		},
	}
}

// ClientOptions returns ARM client options that reach the server: its cloud
// configuration and a transport that trusts its certificate.
func (a *Azure) ClientOptions() *arm.ClientOptions {
	return &arm.ClientOptions{ClientOptions: policy.ClientOptions{Cloud: a.Cloud(), Transport: a.srv.Client()}}
}

// AddIdentity adds a user-assigned managed identity with no credential.
func (a *Azure) AddIdentity(subscription, group, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.identities[azureKey(subscription, group, name)] = map[string]AzureCredential{}
}

// TagIdentity sets the resource tags of an identity AddIdentity added.
func (a *Azure) TagIdentity(subscription, group, name string, tags map[string]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tags[azureKey(subscription, group, name)] = maps.Clone(tags)
}

// Credentials returns the credentials the server holds for the identity,
// by name.
func (a *Azure) Credentials(subscription, group, name string) map[string]AzureCredential {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]AzureCredential{}
	for k, c := range a.identities[azureKey(subscription, group, name)] {
		c.Audiences = slices.Clone(c.Audiences)
		out[k] = c
	}
	return out
}

func azureKey(parts ...string) string { return strings.ToLower(strings.Join(parts, "/")) }

// azurePath matches a federated identity credential's resource path.
var azurePath = regexp.MustCompile(`(?i)^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.ManagedIdentity/userAssignedIdentities/([^/]+)/federatedIdentityCredentials/([^/]+)$`)

// identityPath matches a user-assigned identity's resource path.
var identityPath = regexp.MustCompile(`(?i)^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.ManagedIdentity/userAssignedIdentities/([^/]+)$`)

// azureName is what Azure accepts as a credential's name.
var azureName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{2,119}$`)

func (a *Azure) call(r *http.Request, _ []byte) string {
	if r.Method == http.MethodGet && identityPath.MatchString(r.URL.Path) {
		return "UserAssignedIdentities_Get"
	}
	if !azurePath.MatchString(r.URL.Path) {
		return ""
	}
	switch r.Method {
	case http.MethodPut:
		return "FederatedIdentityCredentials_CreateOrUpdate"
	case http.MethodGet:
		return "FederatedIdentityCredentials_Get"
	case http.MethodDelete:
		return "FederatedIdentityCredentials_Delete"
	}
	return ""
}

func (a *Azure) answer(call string, r *http.Request, body []byte) reply {
	if r.Header.Get("Authorization") != "Bearer "+AzureToken {
		return azureError(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing or not a valid bearer token.")
	}
	if v := r.URL.Query().Get("api-version"); !slices.Contains(azureAPIVersions, v) {
		if v == "" {
			return azureError(http.StatusBadRequest, "MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests.")
		}
		return azureError(http.StatusBadRequest, "InvalidApiVersionParameter", fmt.Sprintf("The api-version '%s' is invalid. The supported versions are '%s'.", v, strings.Join(azureAPIVersions, ",")))
	}
	m := azurePath.FindStringSubmatch(r.URL.Path)
	if call == "UserAssignedIdentities_Get" {
		m = append(identityPath.FindStringSubmatch(r.URL.Path), "")
	}
	sub, group, identity, name := m[1], m[2], m[3], m[4]
	a.mu.Lock()
	defer a.mu.Unlock()
	creds, ok := a.identities[azureKey(sub, group, identity)]
	if !ok {
		return azureError(http.StatusNotFound, "ResourceNotFound", fmt.Sprintf("The Resource 'Microsoft.ManagedIdentity/userAssignedIdentities/%s' under resource group '%s' was not found.", identity, group))
	}
	if call == "UserAssignedIdentities_Get" {
		return azureJSON(http.StatusOK, map[string]any{
			"id":       fmt.Sprintf("/subscriptions/%s/resourcegroups/%s/providers/Microsoft.ManagedIdentity/userAssignedIdentities/%s", sub, group, identity),
			"name":     identity,
			"type":     "Microsoft.ManagedIdentity/userAssignedIdentities",
			"location": "westeurope",
			"tags":     a.tags[azureKey(sub, group, identity)],
		})
	}
	key := strings.ToLower(name)
	resource := func(c AzureCredential) any {
		return map[string]any{
			"id":         fmt.Sprintf("/subscriptions/%s/resourcegroups/%s/providers/Microsoft.ManagedIdentity/userAssignedIdentities/%s/federatedIdentityCredentials/%s", sub, group, identity, name),
			"name":       name,
			"type":       "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials",
			"properties": c,
		}
	}
	switch call {
	case "FederatedIdentityCredentials_Get":
		c, ok := creds[key]
		if !ok {
			return azureError(http.StatusNotFound, "NotFound", fmt.Sprintf("Federated identity credential '%s' was not found.", name))
		}
		return azureJSON(http.StatusOK, resource(c))
	case "FederatedIdentityCredentials_Delete":
		if _, ok := creds[key]; !ok {
			return reply{status: http.StatusNoContent}
		}
		delete(creds, key)
		return reply{status: http.StatusOK}
	}
	var req struct {
		Properties *AzureCredential `json:"properties"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Properties == nil {
		return azureError(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and could not be deserialized.")
	}
	c := *req.Properties
	switch {
	case !azureName.MatchString(name):
		return azureError(http.StatusBadRequest, "BadRequest", fmt.Sprintf("The federated identity credential name '%s' is invalid.", name))
	case !strings.HasPrefix(c.Issuer, "https://"):
		return azureError(http.StatusBadRequest, "BadRequest", "The issuer must be a valid https URL.")
	case c.Subject == "":
		return azureError(http.StatusBadRequest, "BadRequest", "The subject is required.")
	case len(c.Audiences) != 1:
		return azureError(http.StatusBadRequest, "BadRequest", "Exactly one audience is required.")
	}
	status := http.StatusOK
	if _, ok := creds[key]; !ok {
		status = http.StatusCreated
	}
	creds[key] = c
	return azureJSON(status, resource(c))
}

func (a *Azure) throttled() reply {
	rep := azureError(http.StatusTooManyRequests, "TooManyRequests", "The request is being throttled as the limit has been reached for operation type - Write.")
	rep.header.Set("Retry-After", "1")
	return rep
}

func azureJSON(status int, v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		return azureError(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	return reply{status: status, header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, body: b}
}

// azureError is ARM's error object; x-ms-error-code names the code too.
func azureError(status int, code, msg string) reply {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e.Error.Code, e.Error.Message = code, msg
	b, _ := json.Marshal(e)
	return reply{status: status, header: http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Ms-Error-Code": {code}}, body: b}
}

// AzureTokenCredential is an azcore.TokenCredential that gives AzureToken
// for the server's audience, and an error for any other scope.
type AzureTokenCredential struct{}

// GetToken returns AzureToken, valid for an hour.
func (AzureTokenCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	if !slices.Equal(o.Scopes, []string{AzureAudience + "/.default"}) {
		return azcore.AccessToken{}, fmt.Errorf("fakecloud: token for scopes %v, want %s/.default", o.Scopes, AzureAudience)
	}
	return azcore.AccessToken{Token: AzureToken, ExpiresOn: time.Now().Add(time.Hour)}, nil
}
