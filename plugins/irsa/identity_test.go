package irsa_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/irsa/iammock"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
	"github.com/profilekit/profilekit/reconcilers"
)

// identityHost starts a host whose IAM holds the roles in store, with the
// host defaults given (JSON).
func identityHost(t *testing.T, store *roles, defaults string) {
	t.Helper()
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl)
	for r := range store.docs {
		iam.EXPECT().TrustPolicy(gomock.Any(), r).DoAndReturn(store.get).AnyTimes()
		iam.EXPECT().SetTrustPolicy(gomock.Any(), r, gomock.Any()).DoAndReturn(store.set).AnyTimes()
	}
	rolesAbsent(iam, slices.Collect(maps.Keys(store.docs))...)
	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(defaults))}})
}

// A cloud identity is the platform's to hand out: a host that allows none
// trusts no role for any Profile, and says so on the condition.
func TestNoRoleIsTrustedByDefault(t *testing.T) {
	store := &roles{docs: map[string]string{role: startPolicy}}
	identityHost(t, store, `{"oidcProvider":"`+provider+`"}`)
	name := "irsa-deny-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "IdentityNotAllowed")
	t.Logf("condition: %s", cond.Message)
	time.Sleep(time.Second)
	if doc := store.doc(role); doc != startPolicy {
		t.Errorf("the role's trust policy was written while no identity is allowed:\n%s", doc)
	}
	stopListing(t, name)
}

// Templates give each Profile its own role: a Profile that names a role its
// template does not give it is refused, and one that names its own is
// trusted.
func TestRoleOutsideTheTemplatesIsRefused(t *testing.T) {
	mine := "irsa-tmpl-" + rand.String(5)
	own := "kf-" + mine
	ownARN := "arn:aws:iam::111122223333:role/" + own
	store := &roles{docs: map[string]string{role: startPolicy, own: startPolicy}}
	identityHost(t, store, `{"oidcProvider":"`+provider+`","allowedIdentities":[{"identity":"arn:aws:iam::111122223333:role/kf-{{ .Namespace }}"}]}`)
	testhost.NewProfile(t, env.Client, mine, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, mine, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, mine, condType, plugins.ConditionFalse, "IdentityNotAllowed")
	if doc := store.doc(role); doc != startPolicy {
		t.Errorf("a role outside the templates was written:\n%s", doc)
	}
	testhost.UpdateProfile(t, env.Client, mine, func(p *kubeflowv1.Profile) { p.Spec.Plugins[0] = entry(`{"awsIamRole":"` + ownARN + `"}`) })
	testhost.WaitCondition(t, env.Client, mine, condType, plugins.ConditionTrue, "")
	if sid := trustpolicy.StatementID(provider, mine); !strings.Contains(store.doc(own), sid) {
		t.Errorf("the Profile's own role does not trust it:\n%s", store.doc(own))
	}
	stopListing(t, mine)
}

// A role that serves one Profile is a Conflict for a second Profile that
// names it, and the message names the first; a shared allowance lets both.
func TestRoleServingAnotherProfileIsAConflict(t *testing.T) {
	first, second := "irsa-first-"+rand.String(5), "irsa-second-"+rand.String(5)
	store := &roles{docs: map[string]string{role: startPolicy}}
	identityHost(t, store, `{"oidcProvider":"`+provider+`","allowedIdentities":[{"identity":"`+roleARN+`"}]}`)
	testhost.NewProfile(t, env.Client, first, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, first, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, first, condType, plugins.ConditionTrue, "")
	testhost.NewProfile(t, env.Client, second, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, second, "default-editor", nil)
	cond := testhost.WaitCondition(t, env.Client, second, condType, plugins.ConditionFalse, plugins.ReasonConflict)
	if !strings.Contains(cond.Message, first) {
		t.Errorf("condition %q does not name the Profile the role serves", cond.Message)
	}
	if strings.Contains(store.doc(role), trustpolicy.StatementID(provider, second)) {
		t.Errorf("the role trusts the second Profile:\n%s", store.doc(role))
	}
	stopListing(t, second)
	stopListing(t, first)
}

// Two Profiles that name one unshared role at the same moment: one is
// trusted and the other is refused, never both. Each pass finds the other's
// record empty (neither has made anything yet), so only the claim, which
// the API server creates once, can tell them apart. IAM answers slowly, so
// that both passes are between their check and their write at once.
func TestSimultaneousClaimsOfOneRoleTrustOneProfile(t *testing.T) {
	first, second := "irsa-race-a-"+rand.String(5), "irsa-race-b-"+rand.String(5)
	store := &roles{docs: map[string]string{role: startPolicy}}
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl)
	iam.EXPECT().TrustPolicy(gomock.Any(), role).DoAndReturn(func(ctx context.Context, name string) (string, error) {
		time.Sleep(time.Second)
		return store.get(ctx, name)
	}).AnyTimes()
	iam.EXPECT().SetTrustPolicy(gomock.Any(), role, gomock.Any()).DoAndReturn(store.set).AnyTimes()
	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(`{"oidcProvider":"` + provider + `","allowedIdentities":[{"identity":"` + roleARN + `"}]}`))}})
	for _, name := range []string{first, second} {
		testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	}
	for _, name := range []string{first, second} {
		testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	}
	trusted := map[string]bool{}
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		doc := store.doc(role)
		for _, name := range []string{first, second} {
			trusted[name] = strings.Contains(doc, trustpolicy.StatementID(provider, name))
		}
		var msgs []string
		for _, name := range []string{first, second} {
			var p kubeflowv1.Profile
			_ = env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p)
			for _, c := range p.Status.Conditions {
				if c.Type == condType {
					msgs = append(msgs, name+": "+c.Message)
				}
			}
		}
		return trusted[first] || trusted[second], "neither Profile is trusted yet: " + strings.Join(msgs, "; ")
	})
	time.Sleep(3 * time.Second)
	doc := store.doc(role)
	both := strings.Contains(doc, trustpolicy.StatementID(provider, first)) && strings.Contains(doc, trustpolicy.StatementID(provider, second))
	if both {
		t.Fatalf("both Profiles are trusted by one unshared role:\n%s", doc)
	}
	loser := second
	if trusted[second] {
		loser = first
	}
	cond := testhost.WaitCondition(t, env.Client, loser, condType, plugins.ConditionFalse, "")
	t.Logf("%s: %s", loser, cond.Message)
	stopListing(t, first)
	stopListing(t, second)
}

// A Profile that only stops listing the plugin, after its record was lost:
// its spec names no role any more, but the host's template names its own,
// and Revoke takes the namespace's statement off it, record or not.
func TestStopListingWithoutARecordUntrustsTheTemplatesRole(t *testing.T) {
	name := "irsa-unlist-" + rand.String(5)
	own := "kf-" + name
	ownARN := "arn:aws:iam::111122223333:role/" + own
	store := &roles{docs: map[string]string{own: startPolicy}}
	identityHost(t, store, `{"oidcProvider":"`+provider+`","allowedIdentities":[{"identity":"arn:aws:iam::111122223333:role/kf-{{ .Namespace }}"}]}`)
	p := testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+ownARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	sid := trustpolicy.StatementID(provider, name)
	if !strings.Contains(store.doc(own), sid) {
		t.Fatalf("the role does not trust the Profile:\n%s", store.doc(own))
	}
	testhost.LoseRecord(t, env.Client, irsa.Kind, p)
	stopListing(t, name)
	if strings.Contains(store.doc(own), sid) {
		t.Errorf("the role still trusts the namespace after the Profile stopped listing the plugin:\n%s", store.doc(own))
	}
	// The revoke says what it did: the Profile's statement deleted from
	// the role, the service account's annotation taken off.
	testhost.WaitRevoked(t, env.Client, name, irsa.Kind, "1 configured, 1 deleted")
}

// A policy narrowed after a role was trusted: the Profile leaves the
// allowance's selector, is refused the role from then on, and the trust an
// earlier pass wrote goes too (with the service account's annotation).
func TestNarrowedPolicyTakesBackTheTrust(t *testing.T) {
	name := "irsa-narrow-" + rand.String(5)
	store := &roles{docs: map[string]string{role: startPolicy}}
	identityHost(t, store, `{"oidcProvider":"`+provider+`","allowedIdentities":[{"identity":"`+roleARN+`","profileSelector":{"matchLabels":{"cloud":"aws"}}}]}`)
	testhost.NewProfile(t, env.Client, name, map[string]string{"cloud": "aws"}, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	sid := trustpolicy.StatementID(provider, name)
	if !strings.Contains(store.doc(role), sid) {
		t.Fatalf("the role does not trust the Profile:\n%s", store.doc(role))
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { delete(p.Labels, "cloud") })
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "IdentityNotAllowed")
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return !strings.Contains(store.doc(role), sid), "the role still trusts a Profile the policy no longer allows it:\n" + store.doc(role)
	})
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", func(sa *corev1.ServiceAccount) (bool, string) {
		_, ok := sa.Annotations[irsa.AnnotationRoleARN]
		return !ok, "the service account still names the role"
	})
	stopListing(t, name)
}
