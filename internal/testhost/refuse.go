package testhost

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// RefuseRecords makes the API server refuse every write of the Profile's
// outside-state records (ConfigMaps in the records' namespace named by its
// UID), through a validating admission policy, and returns what lifts it.
// It returns once a write is refused.
func RefuseRecords(t *testing.T, c client.Client, p *kubeflowv1.Profile) (lift func()) {
	t.Helper()
	ctx := context.Background()
	namespace, uid := plugins.DefaultRecordsNamespace, string(p.UID)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-records-" + p.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.metadata.namespace != '" + namespace + "' || !object.metadata.name.endsWith('" + uid + "')",
				Message:    "the Profile's records are refused (test)",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	lift = func() {
		for _, o := range []client.Object{binding, policy} {
			if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	}
	t.Cleanup(lift)
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe-" + uid, Namespace: namespace}}
	Eventually(t, 20*time.Second, func() (bool, string) {
		err := c.Create(ctx, probe.DeepCopy())
		if err == nil {
			_ = c.Delete(ctx, probe)
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), fmt.Sprintf("a ConfigMap write was answered %v", err)
	})
	return lift
}

// WaitRecordRefused waits until the Profile's condType is False because
// RefuseRecords refused its plugin's outside-state record, and logs it.
func WaitRecordRefused(t *testing.T, c client.Client, profile, condType string) {
	t.Helper()
	cond := WaitCondition(t, c, profile, condType, plugins.ConditionFalse, "outside-state record")
	if !strings.Contains(cond.Message, "refuse-records-"+profile) {
		t.Errorf("condition %q does not name the refusing policy", cond.Message)
	}
	t.Logf("while the record cannot be written: %s", cond.Message)
}
