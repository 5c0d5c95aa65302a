package irsa_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	"k8s.io/apimachinery/pkg/util/rand"

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
