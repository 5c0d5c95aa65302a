package reconcilers_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/reconcilers"
)

// Requests to three API groups share one limiter: 12 requests at 4 per second
// with a burst of 4 take at least 2 s, where a limiter per group would let
// each group's 4 requests through at once.
func TestRateLimitedSharesOneLimiterAcrossGroups(t *testing.T) {
	c, err := client.New(reconcilers.RateLimited(env.Config, 4, 4), client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	lists := []client.ObjectList{&corev1.NamespaceList{}, &rbacv1.ClusterRoleList{}, &kubeflowv1.ProfileList{}}
	// Discovery first, so that only the lists below are timed.
	for _, l := range lists {
		if err := c.List(t.Context(), l, client.Limit(1)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second + 100*time.Millisecond) // refill the burst

	start := time.Now()
	for range 4 {
		for _, l := range lists {
			if err := c.List(t.Context(), l, client.Limit(1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if took := time.Since(start); took < 1800*time.Millisecond {
		t.Errorf("12 requests over 3 groups took %s at 4 QPS / burst 4, want at least 2 s: the groups do not share one limiter", took)
	}
}
