package plugins_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// laggingLists is a client whose lists answer what they answered at the
// snapshot, as a cache that has not caught up does.
type laggingLists struct {
	client.Client
	configMaps corev1.ConfigMapList
}

func (l laggingLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if cms, ok := list.(*corev1.ConfigMapList); ok {
		l.configMaps.DeepCopyInto(cms)
		return nil
	}
	return l.Client.List(ctx, list, opts...)
}

// Pruning decides from a cache. An object of ours that someone took over
// (relabelled) a moment ago, which the cache still shows as ours, must be
// left; one still ours that was only edited is deleted all the same.
func TestPruneLeavesAnObjectTakenOverUnseenByTheCache(t *testing.T) {
	ns := "prune-taken"
	e := startCreateEnv(t, ns)
	ctx := t.Context()
	if _, err := e.applier(true).Sync(ctx, corev1ac.ConfigMap("taken", ns), corev1ac.ConfigMap("edited", ns)); err != nil {
		t.Fatal(err)
	}
	var snapshot corev1.ConfigMapList
	if err := e.env.Client.List(ctx, &snapshot, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// Someone takes "taken" over; someone edits "edited" and leaves it ours.
	for name, patch := range map[string]string{
		"taken":  `{"metadata":{"labels":{"app.kubernetes.io/managed-by":"someone-else"}}}`,
		"edited": `{"data":{"note":"edited by hand"}}`,
	} {
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = ns, name
		if err := e.env.Client.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}

	lagging := laggingLists{Client: e.env.Client, configMaps: snapshot}
	a := plugins.NewApplier(lagging, "settings", e.profile, e.owns, plugins.WithScheme(e.env.Scheme), plugins.WithLiveReader(e.env.Client))
	res, err := a.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap someone took over was deleted (%v); prune reported %s", err, res.Summary())
	}
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edited"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("our edited ConfigMap, no longer desired, was not deleted: %v", err)
	}
	if got := res.Count(plugins.Deleted); got != 1 {
		t.Errorf("prune reported %s; want 1 deleted", res.Summary())
	}
}
