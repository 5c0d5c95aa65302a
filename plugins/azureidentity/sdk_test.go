package azureidentity_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/plugins/azureidentity"
)

// These tests run the wrapper around the armmsi client against a local
// server that speaks Azure Resource Manager's REST protocol
// (fakecloud.Azure), over TLS with a bearer token.

const (
	callGet    = "FederatedIdentityCredentials_Get"
	callPut    = "FederatedIdentityCredentials_CreateOrUpdate"
	callDelete = "FederatedIdentityCredentials_Delete"
)

var teamA = azureidentity.IdentityRef{Subscription: sub, ResourceGroup: "kubeflow", Name: "team-a"}

// startAzure starts the server, holding the identity teamA, and returns it
// with the Credentials of real SDK clients pointed at it.
func startAzure(t *testing.T) (*fakecloud.Azure, azureidentity.Credentials) {
	t.Helper()
	srv := fakecloud.NewAzure(t)
	srv.AddIdentity(teamA.Subscription, teamA.ResourceGroup, teamA.Name)
	opts := srv.ClientOptions()
	// The SDK's retry policy, with its own backoff cut short; a Retry-After
	// longer than MaxRetryDelay is not waited for at all.
	opts.Retry = policy.RetryOptions{RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 2 * time.Second}
	return srv, azureidentity.NewCredentials(fakecloud.AzureTokenCredential{}, azureidentity.WithClientOptions(opts))
}

func TestSDKAzureCredentialLifecycle(t *testing.T) {
	srv, c := startAzure(t)
	const name = "profilekit-team-a_default-editor"
	want := azureidentity.Credential{Issuer: issuer, Subject: "system:serviceaccount:team-a:default-editor", Audiences: []string{azureidentity.DefaultAudience}}
	held := func() map[string]fakecloud.AzureCredential {
		return srv.Credentials(teamA.Subscription, teamA.ResourceGroup, teamA.Name)
	}

	t.Run("a credential that does not exist is not found, without an error", func(t *testing.T) {
		got, ok, err := c.Get(t.Context(), teamA, name)
		if err != nil || ok {
			t.Errorf("Get = %+v, %v, %v; want not found", got, ok, err)
		}
	})

	t.Run("put creates the credential", func(t *testing.T) {
		if err := c.Put(t.Context(), teamA, name, want); err != nil {
			t.Fatalf("put: %v", err)
		}
		wantHeld := map[string]fakecloud.AzureCredential{name: {Issuer: want.Issuer, Subject: want.Subject, Audiences: want.Audiences}}
		if diff := cmp.Diff(wantHeld, held()); diff != "" {
			t.Errorf("credentials the server holds (-want +got):\n%s", diff)
		}
		got, ok, err := c.Get(t.Context(), teamA, name)
		if err != nil || !ok {
			t.Fatalf("Get = %v, %v", ok, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("credential read (-want +got):\n%s", diff)
		}
	})

	changed := want
	changed.Audiences = []string{"api://AzureADTokenExchangeChina"}
	t.Run("put replaces the credential", func(t *testing.T) {
		if err := c.Put(t.Context(), teamA, name, changed); err != nil {
			t.Fatalf("put: %v", err)
		}
		if diff := cmp.Diff(changed.Audiences, held()[name].Audiences); diff != "" {
			t.Errorf("audiences the server holds (-want +got):\n%s", diff)
		}
	})

	t.Run("delete deletes it, and deleting what is gone is done", func(t *testing.T) {
		for range 2 {
			if err := c.Delete(t.Context(), teamA, name); err != nil {
				t.Fatalf("delete: %v", err)
			}
		}
		if got := held(); len(got) != 0 {
			t.Errorf("server still holds %v", got)
		}
	})

	t.Run("an identity that does not exist", func(t *testing.T) {
		gone := azureidentity.IdentityRef{Subscription: sub, ResourceGroup: "kubeflow", Name: "gone"}
		var re *azcore.ResponseError
		if err := c.Put(t.Context(), gone, name, want); !errors.As(err, &re) || re.ErrorCode != "ResourceNotFound" {
			t.Errorf("put: %v, want ResourceNotFound", err)
		}
		// Its credentials went with it.
		if err := c.Delete(t.Context(), gone, name); err != nil {
			t.Errorf("delete: %v", err)
		}
	})

	t.Run("the client sends ARM's paths, api-version, token and body", func(t *testing.T) {
		wantCalls := []string{callGet + " 404", callPut + " 201", callGet + " 200", callPut + " 200", callDelete + " 200", callDelete + " 204", callPut + " 404", callDelete + " 404"}
		if diff := cmp.Diff(wantCalls, srv.Calls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		put := srv.Requests()[1]
		wantURL := "/subscriptions/" + sub + "/resourceGroups/kubeflow/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a/federatedIdentityCredentials/" + name + "?api-version=2024-11-30"
		if put.Method != http.MethodPut || put.URL != wantURL {
			t.Errorf("put %s %s, want PUT %s", put.Method, put.URL, wantURL)
		}
		wantBody := `{"properties":{"audiences":["` + azureidentity.DefaultAudience + `"],"issuer":"` + issuer + `","subject":"system:serviceaccount:team-a:default-editor"}}`
		if diff := cmp.Diff(wantBody, put.Body); diff != "" {
			t.Errorf("put body (-want +got):\n%s", diff)
		}
	})
	if err := srv.WriteFile("/tmp/evidence/sdk-azure-requests.txt"); err != nil {
		t.Errorf("request log: %v", err)
	}
}

// TestSDKAzureThrottled: ARM answers a caller over its limit with 429 and
// Retry-After; the SDK's retry policy waits as told and calls again.
func TestSDKAzureThrottled(t *testing.T) {
	cred := azureidentity.Credential{Issuer: issuer, Subject: "system:serviceaccount:team-a:default-editor", Audiences: []string{azureidentity.DefaultAudience}}
	const name = "profilekit-team-a_default-editor"
	tests := []struct {
		reason string
		call   string
		do     func(context.Context, azureidentity.Credentials) error
		want   map[string]fakecloud.AzureCredential
	}{
		{
			reason: "a throttled read is read again",
			call:   callGet,
			do: func(ctx context.Context, c azureidentity.Credentials) error {
				_, ok, err := c.Get(ctx, teamA, name)
				if err == nil && !ok {
					err = errors.New("not found")
				}
				return err
			},
			want: map[string]fakecloud.AzureCredential{name: {Issuer: cred.Issuer, Subject: cred.Subject, Audiences: cred.Audiences}},
		},
		{
			reason: "a throttled put is put again",
			call:   callPut,
			do: func(ctx context.Context, c azureidentity.Credentials) error {
				return c.Put(ctx, teamA, name, cred)
			},
			want: map[string]fakecloud.AzureCredential{name: {Issuer: cred.Issuer, Subject: cred.Subject, Audiences: cred.Audiences}},
		},
		{
			reason: "a throttled delete is sent again",
			call:   callDelete,
			do: func(ctx context.Context, c azureidentity.Credentials) error {
				return c.Delete(ctx, teamA, name)
			},
			want: map[string]fakecloud.AzureCredential{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			srv, c := startAzure(t)
			if err := c.Put(t.Context(), teamA, name, cred); err != nil {
				t.Fatalf("put: %v", err)
			}
			srv.Fail(tt.call, fakecloud.Throttle)
			start := time.Now()
			if err := tt.do(t.Context(), c); err != nil {
				t.Fatalf("call: %v", err)
			}
			if took := time.Since(start); took < 900*time.Millisecond {
				t.Errorf("took %v: Retry-After: 1 was not waited for", took)
			}
			calls := srv.Calls()[1:]
			if len(calls) != 2 || calls[0] != tt.call+" 429" || !strings.HasPrefix(calls[1], tt.call+" 20") {
				t.Errorf("calls %v, want one throttled %s and one answered", calls, tt.call)
			}
			if diff := cmp.Diff(tt.want, srv.Credentials(teamA.Subscription, teamA.ResourceGroup, teamA.Name)); diff != "" {
				t.Errorf("credentials the server holds (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSDKAzureTimeout: a server that never answers; the call ends with the
// context's deadline, soon after it, without another attempt.
func TestSDKAzureTimeout(t *testing.T) {
	cred := azureidentity.Credential{Issuer: issuer, Subject: "system:serviceaccount:team-a:default-editor", Audiences: []string{azureidentity.DefaultAudience}}
	for _, call := range []string{callGet, callPut, callDelete} {
		t.Run(call, func(t *testing.T) {
			srv, c := startAzure(t)
			srv.Fail(call, fakecloud.Hang)
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			var err error
			switch call {
			case callGet:
				_, _, err = c.Get(ctx, teamA, "profilekit-x")
			case callPut:
				err = c.Put(ctx, teamA, "profilekit-x", cred)
			default:
				err = c.Delete(ctx, teamA, "profilekit-x")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v, want the context's deadline", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %v past a 300ms deadline", took)
			}
			if diff := cmp.Diff([]string{call + " 0"}, srv.Calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// The default credentials are made on first use: a credential chain that
// does not load is each call's error, never a panic.
func TestDefaultCredentialsWithoutConfiguration(t *testing.T) {
	t.Setenv("AZURE_TOKEN_CREDENTIALS", "no-such-chain")
	c := azureidentity.DefaultCredentials()
	ctx := t.Context()
	id := azureidentity.IdentityRef{}
	_, _, errGet := c.Get(ctx, id, "profilekit-team-a_default-editor")
	errPut := c.Put(ctx, id, "profilekit-team-a_default-editor", azureidentity.Credential{})
	errDelete := c.Delete(ctx, id, "profilekit-team-a_default-editor")
	_, errTags := c.Tags(ctx, id)
	for call, err := range map[string]error{"Get": errGet, "Put": errPut, "Delete": errDelete, "Tags": errTags} {
		if err == nil || !strings.Contains(err.Error(), "Azure credential") || !strings.Contains(err.Error(), "no-such-chain") {
			t.Errorf("%s: %v, want the credential's error naming the value", call, err)
		}
	}
}
