package irsa_test

import (
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
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestSDKAWSPluginLifecycle runs the plugin's Apply and Revoke, in a host,
// through the aws-sdk-go-v2 client against the local AWS IAM server, whose
// first answer to the write is Throttling.
func TestSDKAWSPluginLifecycle(t *testing.T) {
	srv, c := startAWS(t, startPolicy)
	srv.Fail("UpdateAssumeRolePolicy", fakecloud.Throttle)

	name := "irsa-sdk-" + rand.String(5)
	h := testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(c), Options: []reconcilers.Option{
		allow(""), reconcilers.WithResync(300 * time.Millisecond),
		// Profiles of other tests in this control plane are not this host's.
		reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"test": name})),
	}})
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name}, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{irsa.AnnotationRoleARN: roleARN}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	t.Run("the role's trust policy gains our statement; the throttled write was made again", func(t *testing.T) {
		want := []string{"GetRole 200", "UpdateAssumeRolePolicy 400", "UpdateAssumeRolePolicy 200"}
		if diff := cmp.Diff(want, srv.Calls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		subject := "system:serviceaccount:" + name + ":default-editor"
		wantDoc := strings.TrimSuffix(startPolicy, `]}`) + `,
 {"Sid":"` + trustpolicy.StatementID(provider, name) + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
  "Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"` + subject + `"}}}]}`
		got, _ := srv.TrustPolicy(role)
		if diff := cmp.Diff(canonical(t, wantDoc), canonical(t, got)); diff != "" {
			t.Errorf("trust policy the server holds (-want +got):\n%s", diff)
		}
	})

	t.Run("a resync calls IAM no more", func(t *testing.T) {
		before := len(srv.Calls())
		h.ResyncWrites(t, 3, irsa.Kind)
		if got := srv.Calls()[before:]; len(got) != 0 {
			t.Errorf("calls on resync: %v", got)
		}
	})

	t.Run("revoke removes our statement only", func(t *testing.T) {
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
		// One write. Reads besides: failing closed, a revoke pass reads
		// every role the host's allowances name for the Profile (the test
		// allows two; the second does not exist), and a pass may run twice.
		calls := srv.Calls()[before:]
		writes := slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return strings.HasPrefix(c, "GetRole ") })
		if diff := cmp.Diff([]string{"UpdateAssumeRolePolicy 200"}, writes); diff != "" || calls[0] != "GetRole 200" {
			t.Errorf("calls %v; want a read, then one write (-want +got):\n%s", calls, diff)
		}
		got, _ := srv.TrustPolicy(role)
		if diff := cmp.Diff(canonical(t, startPolicy), canonical(t, got)); diff != "" {
			t.Errorf("trust policy the server holds (-want +got):\n%s", diff)
		}
	})
	if err := srv.WriteFile("/tmp/evidence/sdk-aws-plugin-requests.txt"); err != nil {
		t.Errorf("request log: %v", err)
	}
}

// TestSDKTaggedRoleIsAllowed: the host allows any role that IAM has tagged
// for the Profile's namespace. Through the real SDK against the local IAM
// server: a role tagged for the namespace is trusted; one tagged for
// another namespace, or not at all, is refused before its trust policy is
// written.
func TestSDKTaggedRoleIsAllowed(t *testing.T) {
	srv, c := startAWS(t, startPolicy)
	other := strings.TrimSuffix(roleARN, role) + "untagged"
	srv.AddRole(other, startPolicy)
	name := "irsa-tag-" + rand.String(5)
	srv.TagRole(role, "profilekit.dev/namespace", name)
	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(c), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{"allowedIdentities":[{"tag":{"key":"profilekit.dev/namespace","value":"{{ .Namespace }}"}}]}`)),
		reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"test": name})),
	}})
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name}, entry(`{"awsIamRole":"`+other+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "IdentityNotAllowed")
	t.Logf("untagged role: %s", cond.Message)
	if got, _ := srv.TrustPolicy("untagged"); got != startPolicy {
		t.Errorf("the untagged role's trust policy was written: %s", got)
	}

	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins[0] = entry(`{"awsIamRole":"` + roleARN + `"}`) })
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if got, _ := srv.TrustPolicy(role); !strings.Contains(got, trustpolicy.StatementID(provider, name)) {
		t.Errorf("the tagged role does not trust the Profile: %s", got)
	}

	// Tagged for another namespace: refused.
	srv.TagRole(role, "profilekit.dev/namespace", "someone-else")
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "retagged"}
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "does not carry the tag profilekit.dev/namespace="+name)
	stopListing(t, name)
}

// TestSDKTaggedRoleRevokeFailsClosedWithoutARecord: a role the host allows
// by its tag alone, which no allowance names, so that only the Profile's
// spec says where its grant is. With no host running, the record is lost
// and the Profile deleted; the next host's Revoke still takes the Profile's
// statement off the role its spec names.
func TestSDKTaggedRoleRevokeFailsClosedWithoutARecord(t *testing.T) {
	srv, c := startAWS(t, startPolicy)
	name := "irsa-taglost-" + rand.String(5)
	srv.TagRole(role, "profilekit.dev/namespace", name)
	host := func(t *testing.T) {
		testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(c), Options: []reconcilers.Option{
			reconcilers.WithDefaults([]byte(`{"allowedIdentities":[{"tag":{"key":"profilekit.dev/namespace","value":"{{ .Namespace }}"}}]}`)),
			reconcilers.WithShard(labels.SelectorFromSet(labels.Set{"test": name})),
		}})
	}
	sid := trustpolicy.StatementID(provider, name)
	// Made by the test, not its first step, whose end would delete them
	// while its host still runs.
	testhost.NewProfile(t, env.Client, name, map[string]string{"test": name}, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	// The first host stops at the end of this step.
	t.Run("granted", func(t *testing.T) {
		host(t)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		if got, _ := srv.TrustPolicy(role); !strings.Contains(got, sid) {
			t.Fatalf("the tagged role does not trust the Profile: %s", got)
		}
	})
	testhost.LoseRecordAndDelete(t, env.Client, irsa.Kind, name)
	host(t)
	testhost.WaitProfileGone(t, env.Client, name, 20*time.Second)
	if got, _ := srv.TrustPolicy(role); strings.Contains(got, sid) {
		t.Errorf("the role still trusts the deleted Profile, whose record was lost:\n%s", got)
	}
}
