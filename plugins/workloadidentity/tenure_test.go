package workloadidentity_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/mock/gomock"
	iam "google.golang.org/api/iam/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
	"github.com/profilekit/profilekit/plugins/workloadidentity/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestNameDoesNotChangeHands: with the allowance a platform gives each team
// (a Google service account templated on the namespace), alice's team
// account never lets the namespace of mallory, who registers the name after
// alice's Profile is deleted, act as it, unless an administrator releases
// the name.
func TestNameDoesNotChangeHands(t *testing.T) {
	name := "wi-ten-" + rand.String(5)
	gsa := name + "@proj-123.iam.gserviceaccount.com"
	res := "projects/proj-123/serviceAccounts/" + gsa
	acct := &account{policy: &iam.Policy{Etag: "e"}}
	member := "serviceAccount:proj-123.svc.id.goog[" + name + "/default-editor]"
	start := func(t *testing.T) {
		ctrl := gomock.NewController(&testhost.MockReporter{T: t})
		api := iammock.NewMockIAM(ctrl)
		api.EXPECT().Policy(gomock.Any(), res).DoAndReturn(acct.get).AnyTimes()
		api.EXPECT().SetPolicy(gomock.Any(), res, gomock.Any()).DoAndReturn(acct.set).AnyTimes()
		api.EXPECT().Policy(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, r string) (*iam.Policy, error) {
			return nil, fmt.Errorf("%s: %w", r, workloadidentity.ErrNoAccount)
		}).AnyTimes()
		testhost.Start(t, env, testhost.Plugin{Def: workloadidentity.Definition(api), Options: []reconcilers.Option{
			reconcilers.WithDefaults([]byte(`{"allowedIdentities":[{"identity":"{{ .Namespace }}@proj-123.iam.gserviceaccount.com"}]}`))}})
	}
	testhost.HandOver{
		Client: env.Client, Name: name, Kind: workloadidentity.Kind, CondType: condType,
		Entry: entry(`{"gcpServiceAccount":"` + gsa + `"}`),
		Start: start,
		Granted: func(*testing.T) (bool, string) {
			return holds(acct, member), membersOf(acct.bindings())
		},
	}.Run(t)
}
