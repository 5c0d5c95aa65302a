package azureidentity_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/azureidentity/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

// identityHost starts a host whose managed identity is m, with the host
// defaults given (JSON).
func identityHost(t *testing.T, m *msi, defaults string) {
	t.Helper()
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	creds := iammock.NewMockCredentials(ctrl)
	creds.EXPECT().Get(gomock.Any(), ref, gomock.Any()).DoAndReturn(m.get).AnyTimes()
	creds.EXPECT().Put(gomock.Any(), ref, gomock.Any(), gomock.Any()).DoAndReturn(m.put).AnyTimes()
	creds.EXPECT().Delete(gomock.Any(), ref, gomock.Any()).DoAndReturn(m.del).AnyTimes()
	// Every other identity does not exist, and so holds no credential:
	// Revoke looks on every identity the host's allowances name.
	creds.EXPECT().Get(gomock.Any(), gomock.Cond(func(id azureidentity.IdentityRef) bool { return id != ref }), gomock.Any()).
		Return(azureidentity.Credential{}, false, nil).AnyTimes()
	testhost.Start(t, env, testhost.Plugin{Def: azureidentity.Definition(creds), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(defaults))}})
}

// A host that allows no identity federates none and annotates nothing; an
// identity outside the templates is refused; one that serves a Profile is a
// Conflict for a second, naming the first.
func TestIdentityIsThePlatformsToHandOut(t *testing.T) {
	t.Run("default deny", func(t *testing.T) {
		m := &msi{creds: map[string]azureidentity.Credential{}}
		identityHost(t, m, `{"issuer":"`+issuer+`"}`)
		name := "az-deny-" + rand.String(5)
		testhost.NewProfile(t, env.Client, name, nil, entry(spec))
		testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
		cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "IdentityNotAllowed")
		t.Logf("condition: %s", cond.Message)
		time.Sleep(time.Second)
		if got := m.held(); len(got) != 0 {
			t.Errorf("credentials while no identity is allowed: %v", got)
		}
		stopListing(t, name)
	})

	t.Run("templates and conflicts", func(t *testing.T) {
		m := &msi{creds: map[string]azureidentity.Credential{}}
		first, second, outside := "az-first-"+rand.String(5), "az-second-"+rand.String(5), "az-out-"+rand.String(5)
		own := strings.TrimSuffix(identity, "team-a") + "kf-{{ .Namespace }}"
		identityHost(t, m, `{"issuer":"`+issuer+`","allowedIdentities":[`+
			`{"identity":"`+identity+`","profileSelector":{"matchLabels":{"team":"a"}}},{"identity":"`+own+`"}]}`)
		testhost.NewProfile(t, env.Client, outside, nil, entry(spec))
		testhost.CreateServiceAccount(t, env.Client, outside, "default-editor", nil)
		testhost.WaitCondition(t, env.Client, outside, condType, plugins.ConditionFalse, "IdentityNotAllowed")

		testhost.NewProfile(t, env.Client, first, map[string]string{"team": "a"}, entry(spec))
		testhost.CreateServiceAccount(t, env.Client, first, "default-editor", nil)
		testhost.WaitCondition(t, env.Client, first, condType, plugins.ConditionTrue, "")
		testhost.NewProfile(t, env.Client, second, map[string]string{"team": "a"}, entry(spec))
		testhost.CreateServiceAccount(t, env.Client, second, "default-editor", nil)
		cond := testhost.WaitCondition(t, env.Client, second, condType, plugins.ConditionFalse, plugins.ReasonConflict)
		if !strings.Contains(cond.Message, first) {
			t.Errorf("condition %q does not name the Profile the identity serves", cond.Message)
		}
		got := m.held()
		_, firstHeld := got[azureidentity.CredentialName(first, "default-editor")]
		_, secondHeld := got[azureidentity.CredentialName(second, "default-editor")]
		if len(got) != 1 || !firstHeld || secondHeld {
			t.Errorf("credentials = %v; want the first Profile's alone", got)
		}
		for _, n := range []string{second, outside, first} {
			stopListing(t, n)
		}
	})
}

// What fails closed beyond a deletion: a Profile that stops listing the
// plugin after its record was lost loses its credential on the identity the
// host's allowance names for it; and a Profile the policy stops allowing
// (it leaves the allowance's selector) loses its credential at once.
func TestRevocationFailsClosedOnRemovalAndNarrowing(t *testing.T) {
	m := &msi{creds: map[string]azureidentity.Credential{}}
	identityHost(t, m, `{"issuer":"`+issuer+`","allowedIdentities":[{"identity":"`+identity+`","shared":true,"profileSelector":{"matchLabels":{"cloud":"azure"}}}]}`)
	held := func(name string) bool {
		_, ok := m.held()[azureidentity.CredentialName(name, "default-editor")]
		return ok
	}
	start := func(name string) *kubeflowv1.Profile {
		p := testhost.NewProfile(t, env.Client, name, map[string]string{"cloud": "azure"}, entry(spec))
		testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		if !held(name) {
			t.Fatalf("no credential for %s: %v", name, m.held())
		}
		return p
	}

	t.Run("stop listing without a record", func(t *testing.T) {
		name := "az-unlist-" + rand.String(5)
		p := start(name)
		testhost.LoseRecord(t, env.Client, azureidentity.Kind, p)
		stopListing(t, name)
		if held(name) {
			t.Errorf("the credential outlives the plugin's removal: %v", m.held())
		}
	})

	t.Run("a narrowed policy", func(t *testing.T) {
		name := "az-narrow-" + rand.String(5)
		start(name)
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { delete(p.Labels, "cloud") })
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "IdentityNotAllowed")
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			return !held(name), "the credential outlives the policy that allowed it"
		})
		stopListing(t, name)
	})
}
