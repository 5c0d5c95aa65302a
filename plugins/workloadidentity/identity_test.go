package workloadidentity_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	iam "google.golang.org/api/iam/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
	"github.com/profilekit/profilekit/plugins/workloadidentity/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

// identityHost starts a host whose IAM is acct, with the host defaults
// given (JSON).
func identityHost(t *testing.T, acct *account, defaults string) {
	t.Helper()
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	api := iammock.NewMockIAM(ctrl)
	api.EXPECT().Policy(gomock.Any(), resource).DoAndReturn(acct.get).AnyTimes()
	api.EXPECT().SetPolicy(gomock.Any(), resource, gomock.Any()).DoAndReturn(acct.set).AnyTimes()
	testhost.Start(t, env, testhost.Plugin{Def: workloadidentity.Definition(api), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(defaults))}})
}

func holds(acct *account, member string) bool {
	return slices.ContainsFunc(acct.bindings(), func(b *iam.Binding) bool { return slices.Contains(b.Members, member) })
}

// A host that allows no Google service account grants none.
func TestNoAccountIsGrantedByDefault(t *testing.T) {
	acct := &account{policy: &iam.Policy{Etag: "e"}}
	identityHost(t, acct, `{}`)
	name := "wi-deny-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "IdentityNotAllowed")
	t.Logf("condition: %s", cond.Message)
	time.Sleep(time.Second)
	if got := acct.bindings(); len(got) != 0 {
		t.Errorf("bindings while no account is allowed: %s", membersOf(got))
	}
	stopListing(t, name)
}

// An account outside the templates is refused; an account that serves one
// Profile is a Conflict for a second, naming the first.
func TestAccountOutsideTheTemplatesOrServingAnotherProfileIsRefused(t *testing.T) {
	acct := &account{policy: &iam.Policy{Etag: "e"}}
	first, second, outside := "wi-first-"+rand.String(5), "wi-second-"+rand.String(5), "wi-out-"+rand.String(5)
	identityHost(t, acct, `{"allowedIdentities":[`+
		`{"identity":"`+gsa+`","profileSelector":{"matchLabels":{"team":"kf-user"}}},`+
		`{"identity":"{{ .Namespace }}@proj-123.iam.gserviceaccount.com"}]}`)
	team := map[string]string{"team": "kf-user"}

	testhost.NewProfile(t, env.Client, outside, nil, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, outside, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, outside, condType, plugins.ConditionFalse, "IdentityNotAllowed")

	testhost.NewProfile(t, env.Client, first, team, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, first, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, first, condType, plugins.ConditionTrue, "")
	testhost.NewProfile(t, env.Client, second, team, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
	testhost.CreateServiceAccount(t, env.Client, second, "default-editor", nil)
	cond := testhost.WaitCondition(t, env.Client, second, condType, plugins.ConditionFalse, plugins.ReasonConflict)
	if !strings.Contains(cond.Message, first) {
		t.Errorf("condition %q does not name the Profile the account serves", cond.Message)
	}
	member := func(ns string) string { return "serviceAccount:proj-123.svc.id.goog[" + ns + "/default-editor]" }
	if !holds(acct, member(first)) || holds(acct, member(second)) || holds(acct, member(outside)) {
		t.Errorf("bindings = %s; want the first Profile's member alone", membersOf(acct.bindings()))
	}
	for _, n := range []string{second, outside, first} {
		stopListing(t, n)
	}
}
