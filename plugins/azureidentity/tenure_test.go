package azureidentity_test

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/mock/gomock"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/azureidentity/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestNameDoesNotChangeHands: with the allowance a platform gives each team
// (a managed identity templated on the namespace), alice's team identity
// never federates the namespace of mallory, who registers the name after
// alice's Profile is deleted, unless an administrator releases the name.
func TestNameDoesNotChangeHands(t *testing.T) {
	name := "az-tenure-" + rand.String(5)
	own := azureidentity.IdentityRef{Subscription: sub, ResourceGroup: "kubeflow", Name: "kf-" + name}
	ownID := strings.TrimSuffix(identity, "team-a") + own.Name
	m := &msi{creds: map[string]azureidentity.Credential{}}
	start := func(t *testing.T) {
		ctrl := gomock.NewController(&testhost.MockReporter{T: t})
		creds := iammock.NewMockCredentials(ctrl)
		creds.EXPECT().Get(gomock.Any(), own, gomock.Any()).DoAndReturn(m.get).AnyTimes()
		creds.EXPECT().Put(gomock.Any(), own, gomock.Any(), gomock.Any()).DoAndReturn(m.put).AnyTimes()
		creds.EXPECT().Delete(gomock.Any(), own, gomock.Any()).DoAndReturn(m.del).AnyTimes()
		creds.EXPECT().Get(gomock.Any(), gomock.Cond(func(id azureidentity.IdentityRef) bool { return id != own }), gomock.Any()).
			Return(azureidentity.Credential{}, false, nil).AnyTimes()
		testhost.Start(t, env, testhost.Plugin{Def: azureidentity.Definition(creds), Options: []reconcilers.Option{
			reconcilers.WithDefaults([]byte(`{"issuer":"` + issuer + `","allowedIdentities":[{"identity":"` +
				strings.TrimSuffix(identity, "team-a") + `kf-{{ .Namespace }}"}]}`))}})
	}
	credential := azureidentity.CredentialName(name, "default-editor")
	testhost.HandOver{
		Client: env.Client, Name: name, Kind: azureidentity.Kind, CondType: condType,
		Entry: entry(`{"identity":"` + ownID + `","clientId":"` + clientID + `"}`),
		Start: start,
		Granted: func(*testing.T) (bool, string) {
			held := m.held()
			_, ok := held[credential]
			return ok, fmt.Sprint(held)
		},
	}.Run(t)
}
