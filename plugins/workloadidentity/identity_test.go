package workloadidentity_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	iam "google.golang.org/api/iam/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
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
	// Every other account does not exist, as Google IAM answers.
	api.EXPECT().Policy(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, r string) (*iam.Policy, error) {
		return nil, fmt.Errorf("%s: %w", r, workloadidentity.ErrNoAccount)
	}).AnyTimes()
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

// What fails closed beyond a deletion: a Profile that stops listing the
// plugin after its record was lost loses its member on the account the
// host's allowance names for it; and a Profile the policy stops allowing
// (it leaves the allowance's selector) loses its member at once.
func TestRevocationFailsClosedOnRemovalAndNarrowing(t *testing.T) {
	acct := &account{policy: &iam.Policy{Etag: "e"}}
	identityHost(t, acct, `{"allowedIdentities":[{"identity":"`+gsa+`","shared":true,"profileSelector":{"matchLabels":{"cloud":"gcp"}}}]}`)
	member := func(ns string) string { return "serviceAccount:proj-123.svc.id.goog[" + ns + "/default-editor]" }
	start := func(name string) *kubeflowv1.Profile {
		p := testhost.NewProfile(t, env.Client, name, map[string]string{"cloud": "gcp"}, entry(`{"gcpServiceAccount":"`+gsa+`"}`))
		testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		if !holds(acct, member(name)) {
			t.Fatalf("no member for %s: %s", name, membersOf(acct.bindings()))
		}
		return p
	}

	t.Run("stop listing without a record", func(t *testing.T) {
		name := "wi-unlist-" + rand.String(5)
		p := start(name)
		testhost.LoseRecord(t, env.Client, workloadidentity.Kind, p)
		stopListing(t, name)
		if holds(acct, member(name)) {
			t.Errorf("the member outlives the plugin's removal: %s", membersOf(acct.bindings()))
		}
	})

	t.Run("a narrowed policy", func(t *testing.T) {
		name := "wi-narrow-" + rand.String(5)
		start(name)
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { delete(p.Labels, "cloud") })
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "IdentityNotAllowed")
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			return !holds(acct, member(name)), "the member outlives the policy that allowed it"
		})
		stopListing(t, name)
	})
}
