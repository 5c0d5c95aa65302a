package page

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		reason string
		in     kubeflowv1.ProfileCondition
		want   Plugin
	}{{
		reason: "a built-in plugin's condition reads in a user's words; a bad spec is the owner's to fix",
		in:     kubeflowv1.ProfileCondition{Type: "ContributorsReady", Status: "False", Message: "InvalidSpec: entry 1: role admin is not allowed"},
		want: Plugin{Kind: "contributors", Title: "Contributors", Type: "ContributorsReady", Status: "False", State: "Not ready",
			Reason: "InvalidSpec", Message: "entry 1: role admin is not allowed", Fix: FixOwner},
	}, {
		reason: "an identity the host does not allow is the platform's to fix",
		in:     kubeflowv1.ProfileCondition{Type: "AwsIamForServiceAccountReady", Status: "False", Message: "IdentityNotAllowed: not allowed"},
		want: Plugin{Kind: "awsIamForServiceAccount", Title: "AWS identity", Type: "AwsIamForServiceAccountReady", Status: "False", State: "Not ready",
			Reason: "IdentityNotAllowed", Message: "not allowed", Fix: FixPlatform},
	}, {
		reason: "a plugin the page does not know keeps its kind; a pass that waits is nobody's to fix",
		in:     kubeflowv1.ProfileCondition{Type: "WelcomeReady", Status: "False", Message: "Waiting: the app is syncing"},
		want: Plugin{Kind: "welcome", Title: "welcome", Type: "WelcomeReady", Status: "False", State: "Not ready",
			Reason: "Waiting", Message: "the app is syncing", Fix: FixNobody},
	}, {
		reason: "a message without a reason is kept whole",
		in:     kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: "True", Message: "all in sync"},
		want:   Plugin{Kind: "quotas", Title: "Resource quota", Type: "QuotasReady", Status: "True", State: "Ready", Message: "all in sync"},
	}} {
		if diff := cmp.Diff(tc.want, explain(tc.in)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
		}
	}
}
