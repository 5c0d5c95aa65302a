package azureidentity_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// runIdentities are the two managed identities each run of the scenario
// has, by the suffix of their names after kf-<namespace>, with the client
// ID the Profile names for each.
var runIdentities = []struct{ suffix, clientID string }{
	{"-a", "44444444-4444-4444-4444-444444444444"},
	{"-b", "55555555-5555-5555-5555-555555555555"},
}

// runServiceAccounts are the Profile's service accounts the host lists:
// each gets a credential on the identity.
var runServiceAccounts = []string{"default-editor", "default-viewer"}

// pipeline is someone else's credential on each identity of a run, which
// no write of the plugin may change.
var pipeline = azureidentity.Credential{Issuer: "https://token.actions.githubusercontent.com", Subject: "repo:example/ml:ref:refs/heads/main", Audiences: []string{azureidentity.DefaultAudience}}

// azureIdentityScenario is the plugin, through the armmsi client, against
// the local Azure Resource Manager server: a Profile uses one managed
// identity of its own, moves to another (annotated, the old credentials
// deleted, the new ones put, as Azure's one credential per issuer and
// subject needs), and lets go. Each run has its own identities, made by
// Setup with a CI pipeline's credential on each, so that no plan sees
// another's credentials. Observe reads every credential of both identities
// and the annotations on each service account: a credential put twice
// under another name, left behind or lost, or someone else's changed, is a
// difference from the run without perturbation.
func azureIdentityScenario(t *testing.T) plugintest.Scenario {
	srv := fakecloud.NewAzure(t)
	opts := srv.ClientOptions()
	opts.Retry = policy.RetryOptions{RetryDelay: 10 * time.Millisecond, MaxRetryDelay: time.Second}
	creds := azureidentity.NewCredentials(fakecloud.AzureTokenCredential{}, azureidentity.WithClientOptions(opts))
	refOf := func(namespace, suffix string) azureidentity.IdentityRef {
		return azureidentity.IdentityRef{Subscription: sub, ResourceGroup: "kubeflow", Name: "kf-" + namespace + suffix}
	}
	idOf := func(name string) string {
		return "/subscriptions/" + sub + "/resourceGroups/kubeflow/providers/Microsoft.ManagedIdentity/userAssignedIdentities/" + name
	}
	var allowed []any
	for _, id := range runIdentities {
		allowed = append(allowed, map[string]any{"identity": idOf("kf-{{ .Namespace }}" + id.suffix)})
	}
	defaults, err := json.Marshal(map[string]any{"issuer": issuer, "tenantId": tenantID, "serviceAccounts": runServiceAccounts, "allowedIdentities": allowed})
	if err != nil {
		t.Fatal(err)
	}
	spec := func(i int) map[string]any {
		return map[string]any{"identity": idOf("kf-{{ .Profile }}" + runIdentities[i].suffix), "clientId": runIdentities[i].clientID}
	}
	var touches []string
	for _, sa := range runServiceAccounts {
		touches = append(touches, "ServiceAccount <profile>/"+sa)
	}
	return plugintest.Scenario{
		Def:      azureidentity.Definition(creds),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "use an identity", Spec: spec(0)},
			{Name: "move to another", Spec: spec(1)},
			{Name: "remove", Remove: true},
			{Name: "add again", Spec: spec(0)},
			{Name: "delete the Profile", Delete: true},
		},
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			for _, id := range runIdentities {
				ref := refOf(namespace, id.suffix)
				srv.AddIdentity(ref.Subscription, ref.ResourceGroup, ref.Name)
				if err := creds.Put(ctx, ref, "github-actions", pipeline); err != nil {
					return err
				}
			}
			for _, sa := range runServiceAccounts {
				if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa}}); err != nil {
					return err
				}
			}
			return nil
		},
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			out := map[string]string{}
			for _, id := range runIdentities {
				ref := refOf(namespace, id.suffix)
				for name, cred := range srv.Credentials(ref.Subscription, ref.ResourceGroup, ref.Name) {
					b, err := json.Marshal(cred)
					if err != nil {
						return nil, err
					}
					out["credential "+ref.Name+" "+name] = string(b)
				}
			}
			for _, name := range runServiceAccounts {
				var sa corev1.ServiceAccount
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sa); err != nil {
					return nil, err
				}
				for _, k := range []string{azureidentity.AnnotationClientID, azureidentity.AnnotationTenantID} {
					if v, ok := sa.Annotations[k]; ok {
						out["annotation "+name+" "+k] = v
					}
				}
			}
			return out, nil
		},
		Grants: func(_ context.Context, namespace string) ([]string, error) {
			var out []string
			for _, id := range runIdentities {
				ref := refOf(namespace, id.suffix)
				for _, cred := range srv.Credentials(ref.Subscription, ref.ResourceGroup, ref.Name) {
					out = append(out, ref.Name+" trusts "+cred.Subject+" from "+cred.Issuer)
				}
			}
			return out, nil
		},
		// A rival may name the Profile's identities, which serve one Profile.
		RivalDefaults: func(profile string) []byte {
			var allowed []any
			for _, id := range runIdentities {
				allowed = append(allowed, map[string]any{"identity": idOf("kf-" + profile + id.suffix)})
			}
			b, err := json.Marshal(map[string]any{"issuer": issuer, "tenantId": tenantID, "serviceAccounts": runServiceAccounts, "allowedIdentities": allowed})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Equivalent: map[string]string{
			plugintest.CallTwice.Name: "every call is idempotent: the grant reads the credential and puts it only when it is missing or not as wanted " +
				"(and refuses one that is not the Profile's), the revoke reads it and deletes it only when it is there and the Profile's; made again at " +
				"once, each finds its work done and writes nothing. The second call costs one read and changes nothing the identity, the record or the " +
				"harness can tell (the lost plans, which make each call again on the next pass, pass as well)",
		},
		Touches: touches,
		// What outlives the Profile: the annotations (in its namespace,
		// which goes with it) and the pipeline's credentials.
		Retained: []string{"annotation ", "credential kf-<profile>-a github-actions", "credential kf-<profile>-b github-actions"},
	}
}

func TestAzureIdentitySurvivesEveryPerturbation(t *testing.T) {
	plugintest.Harness{Client: env.Client}.Survives(t, azureIdentityScenario, plugintest.EveryPattern...)
}
