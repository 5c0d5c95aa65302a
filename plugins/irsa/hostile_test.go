package irsa_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/irsa/iammock"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestRoleAnnotatedOnlyOnceTrusted: a pod given a role that does not trust
// it fails in confusing ways, so the annotation waits for the trust policy.
func TestRoleAnnotatedOnlyOnceTrusted(t *testing.T) {
	tests := []struct {
		reason   string
		defaults string
		policy   func(context.Context, string) (string, error)
		want     string
	}{
		{
			reason:   "the trust policy would pass the size limit",
			defaults: `{"maxPolicySize":400}`,
			policy:   func(context.Context, string) (string, error) { return startPolicy, nil },
			want:     irsa.ReasonTrustPolicyTooLarge,
		},
		{
			reason: "IAM does not answer",
			policy: func(context.Context, string) (string, error) { return "", errors.New("service unavailable") },
			want:   "service unavailable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			ctrl := gomock.NewController(&testhost.MockReporter{T: t})
			iam := iammock.NewMockIAM(ctrl)
			iam.EXPECT().TrustPolicy(gomock.Any(), role).DoAndReturn(tt.policy).MinTimes(1)
			var opts []reconcilers.Option
			if tt.defaults != "" {
				opts = append(opts, reconcilers.WithDefaults([]byte(tt.defaults)))
			}
			testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: opts})
			name := "irsa-order-" + rand.String(5)
			testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
			testhost.CreateServiceAccount(t, env.Client, name, "default-editor", map[string]string{"keep": "me"})
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, tt.want)
			sa := testhost.WaitServiceAccount(t, env.Client, name, "default-editor", func(*corev1.ServiceAccount) (bool, string) { return true, "" })
			if got, ok := sa.Annotations[irsa.AnnotationRoleARN]; ok {
				t.Errorf("service account annotated with %s while the role does not trust it", got)
			}
			ctrl.Finish()
		})
	}
}
