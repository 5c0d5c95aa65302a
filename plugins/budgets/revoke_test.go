package budgets_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// TestRevokeKeepsTheSharesMembershipHolds calls Revoke once, as a host
// does when a Profile stops listing the plugin and when it is deleted.
// Membership is the host's: a Profile that stops listing the plugin keeps
// the quota of every budget its labels still select (it must not escape
// them) and gives up the others; a Profile being deleted gives up every
// share.
func TestRevokeKeepsTheSharesMembershipHolds(t *testing.T) {
	def := budgets.Definition()
	cfg, err := def.DecodeHostDefaults([]byte(`{"budgets": [
		{"name": "lab", "profileSelector": {"matchLabels": {"` + labelTeam + `": "vision"}}, "hard": {"requests.cpu": "8"}},
		{"name": "other", "profileSelector": {"matchLabels": {"` + labelTeam + `": "speech"}}, "hard": {"requests.cpu": "8"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		deleting bool
		want     []string // the budget quotas left
	}{
		{"the plugin no longer listed", false, []string{budgets.QuotaName("lab")}},
		{"the Profile being deleted", true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			name := uniqueName("revoke")
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := env.Client.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) }) //nolint:forbidigo // cleanups run after t.Context is canceled
			// It was once in both budgets; its labels now select only lab.
			for _, b := range []string{"lab", "other"} {
				q := &corev1.ResourceQuota{
					ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: budgets.QuotaName(b), Labels: plugins.OwnershipLabels(budgets.Kind, name)},
					Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}},
				}
				if err := env.Client.Create(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{labelTeam: "vision"}}}
			if c.deleting {
				p.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
			}
			res, err := def.Plugin.Revoke(ctx, plugins.Request{Profile: p, Config: cfg, Client: env.Client})
			if err != nil {
				t.Fatalf("revoke: %v", err)
			}
			var left corev1.ResourceQuotaList
			if err := env.Client.List(ctx, &left, client.InNamespace(name)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range left.Items {
				if q.DeletionTimestamp == nil {
					got = append(got, q.Name)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("budget quotas left after the revoke (%s): %v, want %v", res.Summary(), got, c.want)
			}
			t.Logf("revoke: %s; left %v", res.Summary(), got)
		})
	}
}
