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
	"github.com/profilekit/profilekit/plugins/outside"
)

// RefuseRecords makes the API server refuse every write of the Profile's
// outside-state records (ConfigMaps in the records' namespace named by its
// UID), through a validating admission policy, and returns what lifts it.
// It returns once a write is refused.
func RefuseRecords(t *testing.T, c client.Client, p *kubeflowv1.Profile) (lift func()) {
	t.Helper()
	namespace, uid := outside.DefaultRecordsNamespace, string(p.UID)
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe-" + uid, Namespace: namespace}}
	return Refuse(t, c, "refuse-records-"+p.Name, "configmaps",
		"object.metadata.namespace != '"+namespace+"' || !object.metadata.name.endsWith('"+uid+"')", probe)
}

// Refuse makes the API server refuse the writes (ops; creates and updates
// when none are given) of resource (a core kind's, such as "configmaps";
// several separated by commas, such as "persistentvolumes,persistentvolumes/status")
// for which expression (CEL, over object) is false, through a validating
// admission policy named name, and returns what lifts it. It returns once
// the create of probe, an object the policy refuses, is refused.
func Refuse(t *testing.T, c client.Client, name, resource, expression string, probe client.Object, ops ...admissionregistrationv1.OperationType) (lift func()) {
	t.Helper()
	if len(ops) == 0 {
		ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	}
	lift = refuse(t, c, name, resource, expression, ops)
	ctx := context.Background()
	Eventually(t, 20*time.Second, func() (bool, string) {
		err := c.Create(ctx, probe.DeepCopyObject().(client.Object))
		if err == nil {
			_ = c.Delete(ctx, probe)
		}
		return refused(err), fmt.Sprintf("the probe's create was answered %v", err)
	})
	return lift
}

// RefuseDeletes makes the API server refuse the deletes of resource for
// which expression (CEL, over oldObject, the object as it is) is false,
// and returns what lifts it. It returns once the delete of probe, an
// object it creates and the policy refuses to delete, is refused; probe
// is deleted when the policy is lifted.
func RefuseDeletes(t *testing.T, c client.Client, name, resource, expression string, probe client.Object) (lift func()) {
	t.Helper()
	ctx := context.Background()
	unrefuse := refuse(t, c, name, resource, expression, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete})
	lift = func() {
		unrefuse()
		Eventually(t, 20*time.Second, func() (bool, string) {
			err := c.Delete(ctx, probe)
			return err == nil || apierrors.IsNotFound(err), fmt.Sprintf("the probe's delete, the policy lifted, was answered %v", err)
		})
	}
	t.Cleanup(lift)
	Eventually(t, 20*time.Second, func() (bool, string) {
		if err := c.Create(ctx, probe.DeepCopyObject().(client.Object)); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Sprintf("the probe's create was answered %v", err)
		}
		err := c.Delete(ctx, probe)
		return refused(err), fmt.Sprintf("the probe's delete was answered %v", err)
	})
	return lift
}

// refuse makes the policy and its binding, and returns what deletes them
// (also at the test's end).
func refuse(t *testing.T, c client.Client, name, resource, expression string, ops []admissionregistrationv1.OperationType) (lift func()) {
	t.Helper()
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: ops,
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: strings.Split(resource, ",")},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: "refused by " + name + " (test)"}},
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
	return lift
}

// refused tells whether err is admission's refusal.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err)
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
