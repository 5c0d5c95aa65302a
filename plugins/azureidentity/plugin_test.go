package azureidentity_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/azureidentity/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const (
	condType = "AzureWorkloadIdentityReady"
	sub      = "00000000-0000-0000-0000-000000000000"
	identity = "/subscriptions/" + sub + "/resourceGroups/kubeflow/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a"
	clientID = "11111111-1111-1111-1111-111111111111"
	// allowed lets the Profiles of every test use the test identity (by
	// resource ID, or by client ID where a Profile names no identity),
	// shared: Profiles of earlier tests may still hold it.
	allowed  = `"allowedIdentities":[{"identity":"` + identity + `","shared":true},{"identity":"` + clientID + `","shared":true}]`
	tenantID = "22222222-2222-2222-2222-222222222222"
	issuer   = "https://westeurope.oic.prod-aks.azure.com/" + tenantID + "/33333333-3333-3333-3333-333333333333/"
)

func entry(spec string) kubeflowv1.Plugin {
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: azureidentity.Kind}, Spec: &runtime.RawExtension{Raw: []byte(spec)}}
}

func annotationsAre(want map[string]string) func(*corev1.ServiceAccount) (bool, string) {
	return func(sa *corev1.ServiceAccount) (bool, string) {
		d := cmp.Diff(want, sa.Annotations)
		return d == "", "annotations (-want +got):\n" + d
	}
}

func TestFederatedCredentialLifecycle(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	creds := iammock.NewMockCredentials(ctrl)
	ref := azureidentity.IdentityRef{Subscription: sub, ResourceGroup: "kubeflow", Name: "team-a"}
	name := "az-" + rand.String(5)
	credName := "profilekit-" + name + "_default-editor"
	want := azureidentity.Credential{Issuer: issuer, Subject: "system:serviceaccount:" + name + ":default-editor", Audiences: []string{azureidentity.DefaultAudience}}
	creds.EXPECT().Get(gomock.Any(), ref, credName).Return(azureidentity.Credential{}, false, nil).Times(1)
	creds.EXPECT().Put(gomock.Any(), ref, credName, want).Return(nil).Times(1)

	h := testhost.Start(t, env, testhost.Plugin{Def: azureidentity.Definition(creds), Options: []reconcilers.Option{
		reconcilers.WithResync(300 * time.Millisecond),
		allow(`,"issuer":"` + issuer + `","tenantId":"` + tenantID + `"`),
	}})
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"identity":"`+identity+`","clientId":"`+clientID+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", map[string]string{"team.example.org/contact": "alice"})
	sa := testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{
		"team.example.org/contact":       "alice",
		azureidentity.AnnotationClientID: clientID,
		azureidentity.AnnotationTenantID: tenantID,
	}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	t.Run("our field manager owns our two annotation keys", func(t *testing.T) {
		want := []string{`Apply {"f:metadata":{"f:annotations":{"f:` + azureidentity.AnnotationClientID + `":{},"f:` + azureidentity.AnnotationTenantID + `":{}}}}`}
		if diff := cmp.Diff(want, testhost.FieldsOf(sa, plugins.FieldManagerFor(azureidentity.Kind))); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
	})

	t.Run("a resync makes no Azure call and sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, azureidentity.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("revoke deletes our credential and our annotations only", func(t *testing.T) {
		// Read, deleted once; a further pass of the revoke, failing
		// closed, looks again and finds it gone.
		var deleted atomic.Bool
		creds.EXPECT().Get(gomock.Any(), ref, credName).DoAndReturn(
			func(context.Context, azureidentity.IdentityRef, string) (azureidentity.Credential, bool, error) {
				if deleted.Load() {
					return azureidentity.Credential{}, false, nil
				}
				return want, true, nil
			}).MinTimes(1)
		creds.EXPECT().Delete(gomock.Any(), ref, credName).DoAndReturn(func(context.Context, azureidentity.IdentityRef, string) error {
			deleted.Store(true)
			return nil
		}).Times(1)
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{"team.example.org/contact": "alice"}))
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var p kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			return len(p.Finalizers) == 0, "finalizers " + strings.Join(p.Finalizers, ",")
		})
		// And the revoke says so: the credential deleted, the annotations
		// taken off.
		testhost.WaitRevoked(t, env.Client, name, azureidentity.Kind, "1 configured, 1 deleted")
	})
	ctrl.Finish()
}

func TestMissingIssuerIsReported(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	creds := iammock.NewMockCredentials(ctrl) // no expectations: any call fails the test
	testhost.Start(t, env, testhost.Plugin{Def: azureidentity.Definition(creds), Options: []reconcilers.Option{allow("")}})
	name := "az-noissuer-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"identity":"`+identity+`","clientId":"`+clientID+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "InvalidConfig: plugin AzureWorkloadIdentity: issuer")
	// The annotation does not depend on the issuer.
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{azureidentity.AnnotationClientID: clientID}))
	ctrl.Finish()
}

// allow returns the host defaults that allow the test identity, with extra
// (",\"key\":value...") after them.
func allow(extra string) reconcilers.Option {
	return reconcilers.WithDefaults([]byte("{" + allowed + extra + "}"))
}
