package azureidentity_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestSDKAzurePluginLifecycle runs the plugin's Apply and Revoke, in a host,
// through the armmsi client against the local Azure Resource Manager server,
// whose first answer to the put is 429 with Retry-After.
func TestSDKAzurePluginLifecycle(t *testing.T) {
	srv, c := startAzure(t)
	srv.Fail(callPut, fakecloud.Throttle)

	name := "az-sdk-" + rand.String(5)
	h := testhost.Start(t, env, testhost.Plugin{Def: azureidentity.Definition(c), Options: []reconcilers.Option{
		reconcilers.WithResync(300 * time.Millisecond),
		allow(`,"issuer":"` + issuer + `"`),
		// Profiles of other tests in this control plane are not this host's.
		reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"test": name})),
	}})
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name}, entry(`{"identity":"`+identity+`","clientId":"`+clientID+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{azureidentity.AnnotationClientID: clientID}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	held := func() map[string]fakecloud.AzureCredential {
		return srv.Credentials(teamA.Subscription, teamA.ResourceGroup, teamA.Name)
	}

	t.Run("the identity holds a credential for the service account; the throttled put was made again", func(t *testing.T) {
		want := []string{callGet + " 404", callPut + " 429", callPut + " 201"}
		if diff := cmp.Diff(want, srv.Calls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		wantHeld := map[string]fakecloud.AzureCredential{
			azureidentity.CredentialName(name, "default-editor"): {Issuer: issuer, Subject: "system:serviceaccount:" + name + ":default-editor", Audiences: []string{azureidentity.DefaultAudience}},
		}
		if diff := cmp.Diff(wantHeld, held()); diff != "" {
			t.Errorf("credentials the server holds (-want +got):\n%s", diff)
		}
	})

	t.Run("a resync calls Azure no more", func(t *testing.T) {
		before := len(srv.Calls())
		h.ResyncWrites(t, 3, azureidentity.Kind)
		if got := srv.Calls()[before:]; len(got) != 0 {
			t.Errorf("calls on resync: %v", got)
		}
	})

	t.Run("revoke deletes our credential", func(t *testing.T) {
		before := len(srv.Calls())
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(nil))
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var p kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			return len(p.Finalizers) == 0, "finalizers " + strings.Join(p.Finalizers, ",")
		})
		// One delete. A further pass of the revoke, failing closed, looks
		// again and finds the credential gone.
		calls := srv.Calls()[before:]
		deletes := slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return c == callGet+" 404" })
		if diff := cmp.Diff([]string{callGet + " 200", callDelete + " 200"}, deletes); diff != "" {
			t.Errorf("calls %v; want a read, then one delete (-want +got):\n%s", calls, diff)
		}
		if got := held(); len(got) != 0 {
			t.Errorf("server still holds %v", got)
		}
	})
	if err := srv.WriteFile("/tmp/evidence/sdk-azure-plugin-requests.txt"); err != nil {
		t.Errorf("request log: %v", err)
	}
}

// An allowance by tag: the plugin reads the identity's resource tags from
// Azure Resource Manager before it puts any credential. An identity that
// does not carry the tag for the Profile is refused with nothing put; once
// the platform tags it for the Profile, the credential is put.
func TestSDKTaggedIdentityIsAllowed(t *testing.T) {
	srv, c := startAzure(t)
	name := "az-tag-" + rand.String(5)
	testhost.Start(t, env, testhost.Plugin{Def: azureidentity.Definition(c), Options: []reconcilers.Option{
		reconcilers.WithResync(300 * time.Millisecond),
		reconcilers.WithDefaults([]byte(`{"issuer":"` + issuer + `","allowedIdentities":[{"tag":{"key":"profilekit.dev/namespace","value":"{{ .Namespace }}"}}]}`)),
		reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"test": name})),
	}})
	srv.TagIdentity(teamA.Subscription, teamA.ResourceGroup, teamA.Name, map[string]string{"profilekit.dev/namespace": "someone-else"})
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name}, entry(`{"identity":"`+identity+`","clientId":"`+clientID+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "IdentityNotAllowed")
	t.Logf("condition: %s", cond.Message)
	if got := srv.Credentials(teamA.Subscription, teamA.ResourceGroup, teamA.Name); len(got) != 0 {
		t.Errorf("credentials put for an identity tagged for another namespace: %v", got)
	}
	if calls := srv.Calls(); len(calls) == 0 || !strings.HasPrefix(calls[0], "UserAssignedIdentities_Get 200") {
		t.Errorf("calls = %v; want the identity's tags read first", calls)
	}

	srv.TagIdentity(teamA.Subscription, teamA.ResourceGroup, teamA.Name, map[string]string{"profilekit.dev/namespace": name})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if _, ok := srv.Credentials(teamA.Subscription, teamA.ResourceGroup, teamA.Name)[azureidentity.CredentialName(name, "default-editor")]; !ok {
		t.Errorf("no credential for the Profile once the identity is tagged for it")
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		got := srv.Credentials(teamA.Subscription, teamA.ResourceGroup, teamA.Name)
		return len(got) == 0, "credentials left"
	})
}

// TestSDKTaggedIdentityRevokeFailsClosedWithoutARecord: an identity that
// only its tag allows, so that the host's policy names no identity, is
// named by the Profile's spec alone. With the record of the credential
// lost, the deletion of the Profile still deletes the credential: the next
// Profile of the name gets no identity from the one before.
func TestSDKTaggedIdentityRevokeFailsClosedWithoutARecord(t *testing.T) {
	srv, c := startAzure(t)
	name := "az-taglost-" + rand.String(5)
	srv.TagIdentity(teamA.Subscription, teamA.ResourceGroup, teamA.Name, map[string]string{"profilekit.dev/namespace": name})
	host := func(t *testing.T) {
		testhost.Start(t, env, testhost.Plugin{Def: azureidentity.Definition(c), Options: []reconcilers.Option{
			reconcilers.WithDefaults([]byte(`{"issuer":"` + issuer + `","allowedIdentities":[{"tag":{"key":"profilekit.dev/namespace","value":"{{ .Namespace }}"}}]}`)),
			reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"test": name})),
		}})
	}
	credential := azureidentity.CredentialName(name, "default-editor")
	// Made by the test, not its first step, whose end would delete them
	// while its host still runs.
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name}, entry(`{"identity":"`+identity+`","clientId":"`+clientID+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	// The first host stops at the end of this step.
	t.Run("granted", func(t *testing.T) {
		host(t)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		if _, ok := srv.Credentials(teamA.Subscription, teamA.ResourceGroup, teamA.Name)[credential]; !ok {
			t.Fatal("no credential for the Profile on the tagged identity")
		}
	})
	testhost.LoseRecordAndDelete(t, env.Client, azureidentity.Kind, name)
	host(t)
	testhost.WaitProfileGone(t, env.Client, name, 20*time.Second)
	if got := srv.Credentials(teamA.Subscription, teamA.ResourceGroup, teamA.Name); len(got) != 0 {
		t.Errorf("credentials left on the identity after the deletion, whose record was lost: %v", slices.Sorted(maps.Keys(got)))
	}
}
