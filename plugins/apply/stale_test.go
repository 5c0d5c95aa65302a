package apply_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// lagging is a client whose reads of ConfigMaps answer what they answered
// at the snapshot, as a cache that has not caught up does; its writes reach
// the API server.
type lagging struct {
	client.Client
	configMaps corev1.ConfigMapList
}

func (l lagging) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if cms, ok := list.(*corev1.ConfigMapList); ok {
		l.configMaps.DeepCopyInto(cms)
		return nil
	}
	return l.Client.List(ctx, list, opts...)
}

func (l lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return l.Client.Get(ctx, key, obj, opts...)
	}
	for i := range l.configMaps.Items {
		if item := &l.configMaps.Items[i]; item.Namespace == key.Namespace && item.Name == key.Name {
			item.DeepCopyInto(cm)
			return nil
		}
	}
	return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
}

// snapshot lists the namespace's ConfigMaps as the API server has them now.
func snapshot(t *testing.T, c client.Client, ns string) corev1.ConfigMapList {
	t.Helper()
	var list corev1.ConfigMapList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list
}

// byHand patches ConfigMap ns/name as someone else would.
func byHand(t *testing.T, c client.Client, ns, name, patch string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = ns, name
	if err := c.Patch(t.Context(), cm, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

const takeOver = `{"metadata":{"labels":{"app.kubernetes.io/managed-by":"someone-else"}}}`

// behindTakeOver lets someone take ConfigMap "taken" over and edit
// "edited" (still ours), and returns the plugin's Applier over a cache that
// has seen neither, with the API server as its live reader.
func (e *createEnv) behindTakeOver(t *testing.T, ns string) *apply.Applier {
	t.Helper()
	seen := snapshot(t, e.env.Client, ns)
	byHand(t, e.env.Client, ns, "taken", takeOver)
	byHand(t, e.env.Client, ns, "edited", `{"data":{"note":"edited by hand"}}`)
	c := lagging{Client: e.env.Client, configMaps: seen}
	return apply.New(c, "settings", e.profile, e.owns, apply.WithScheme(e.env.Scheme), apply.WithLiveReader(e.env.Client))
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
	a := e.behindTakeOver(t, ns)
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

// An object of ours that someone took over a moment ago, which the cache
// still shows as ours, must not be written when what we want of it
// changes: the apply carries the version read, fails, and the object read
// from the API server is no longer ours. One still ours that was only
// edited is written all the same.
func TestApplyLeavesAnObjectTakenOverUnseenByTheCache(t *testing.T) {
	ns := "apply-taken"
	e := startCreateEnv(t, ns)
	ctx := t.Context()
	want := func(value string) []runtime.ApplyConfiguration {
		return []runtime.ApplyConfiguration{
			corev1ac.ConfigMap("taken", ns).WithData(map[string]string{"mode": value}),
			corev1ac.ConfigMap("edited", ns).WithData(map[string]string{"mode": value}),
		}
	}
	if _, err := e.applier(true).Sync(ctx, want("strict")...); err != nil {
		t.Fatal(err)
	}
	a := e.behindTakeOver(t, ns)
	res, err := a.Sync(ctx, want("open")...)
	if err == nil || !strings.Contains(err.Error(), "taken exists and is not managed by plugin settings") {
		t.Errorf("Sync = %s, %v; want a conflict on the taken-over ConfigMap", res.Summary(), err)
	}
	var taken, edited corev1.ConfigMap
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, &taken); err != nil {
		t.Fatal(err)
	}
	if taken.Data["mode"] != "strict" || taken.Labels[plugins.LabelManagedBy] != "someone-else" {
		t.Errorf("the taken-over ConfigMap was written: data %v, labels %v", taken.Data, taken.Labels)
	}
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edited"}, &edited); err != nil {
		t.Fatal(err)
	}
	if edited.Data["mode"] != "open" {
		t.Errorf("our edited ConfigMap was not written: data %v", edited.Data)
	}
}
