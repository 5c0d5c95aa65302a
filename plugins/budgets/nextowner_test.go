package budgets_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// A Profile name is not an identity across time. A member deleted while
// its namespace stays (a namespace the core plugin did not make) leaves the
// team: its quota goes and its share returns to the others. The next
// Profile of that name, of another owner and in no budget, gets no budget
// quota in the namespace it finds, nor any of the first member's share.
func TestNextOwnerOfANameIsNoMember(t *testing.T) {
	ctx := t.Context()
	team, name := uniqueName("next"), uniqueName("b")
	startBalancer(t, hostConfig(t, teamBudget(name, team, cpu("1"), cpu("1"))))
	first := newMember(t, uniqueName("first"), team)
	waitShare(t, first.Name, name, corev1.ResourceRequestsCPU, "1")
	if err := createPod(ctx, env.Client, first.Name, "1"); err != nil {
		t.Fatalf("pod within the first member's share: %v", err)
	}

	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		_, err := quota(ctx, first.Name, name)
		return apierrors.IsNotFound(err), "the deleted member's quota is still there"
	})

	next := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: first.Name},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory@example.org"}},
	}
	if err := env.Client.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), next) })
	// A member that joins after the next Profile was made: once its
	// share is enforced, the balancer has seen the next Profile too. The
	// first member's pod, in a namespace no member holds now, no longer
	// counts: the whole budget (1 CPU, all the first member held) is free
	// for the new member.
	other := newMember(t, uniqueName("other"), team)
	waitShare(t, other.Name, name, corev1.ResourceRequestsCPU, "1")
	if q, err := quota(ctx, next.Name, name); !apierrors.IsNotFound(err) {
		t.Errorf("the next owner of the name, in no budget, has the budget's quota %v (%v)", q.Spec.Hard, err)
	}
}
