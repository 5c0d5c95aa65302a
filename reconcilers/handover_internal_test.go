package reconcilers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// handOverConfig stands in for core's Config.
type handOverConfig struct{ on bool }

func (c handOverConfig) HandedOverFinalizer() (string, []string) {
	if !c.on {
		return "", nil
	}
	return "profile-finalizer", []string{"WorkloadIdentity"}
}

// The upstream controller's finalizer goes only where nothing is left
// unguarded: the host serves the Profile, and every upstream plugin kind
// it lists is served by a plugin of the host that holds its own finalizer
// (or, on deletion, served it).
func TestHandOverDue(t *testing.T) {
	const gen = 3
	core := kubeflowv1.ProfileCondition{Type: "CoreReady", Status: plugins.ConditionTrue, ObservedGeneration: gen}
	ready := kubeflowv1.ProfileCondition{Type: plugins.ConditionReady, Status: plugins.ConditionTrue, ObservedGeneration: gen}
	wi := kubeflowv1.ProfileCondition{Type: "WorkloadIdentityReady", Status: plugins.ConditionTrue, ObservedGeneration: gen}
	listsWI := []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: "WorkloadIdentity"}}}
	now := metav1.NewTime(time.Now())
	for _, tt := range []struct {
		reason     string
		off        bool
		conds      []kubeflowv1.ProfileCondition
		finalizers []string
		plugins    []kubeflowv1.Plugin
		deleting   bool
		want       bool
	}{
		{reason: "served and Ready", conds: []kubeflowv1.ProfileCondition{core, ready}, want: true},
		{reason: "the host's config hands nothing over", off: true, conds: []kubeflowv1.ProfileCondition{core, ready}},
		{reason: "no upstream finalizer to hand over", conds: []kubeflowv1.ProfileCondition{core, ready}, finalizers: []string{}},
		{reason: "core not reported yet", conds: []kubeflowv1.ProfileCondition{ready}},
		{reason: "core failed", conds: []kubeflowv1.ProfileCondition{{Type: "CoreReady", Status: plugins.ConditionFalse, ObservedGeneration: gen}, ready}},
		{reason: "core True for an older generation", conds: []kubeflowv1.ProfileCondition{{Type: "CoreReady", Status: plugins.ConditionTrue, ObservedGeneration: gen - 1}, ready}},
		{reason: "another plugin not Ready", conds: []kubeflowv1.ProfileCondition{core, {Type: plugins.ConditionReady, Status: plugins.ConditionFalse, ObservedGeneration: gen}}},
		{reason: "lists an upstream kind no plugin of the host serves", conds: []kubeflowv1.ProfileCondition{core, ready}, plugins: listsWI},
		{reason: "lists an upstream kind served without its finalizer yet", conds: []kubeflowv1.ProfileCondition{core, ready, wi}, plugins: listsWI},
		{reason: "lists an upstream kind served under its own finalizer", conds: []kubeflowv1.ProfileCondition{core, ready, wi}, plugins: listsWI,
			finalizers: []string{"profile-finalizer", plugins.FinalizerPrefix + "WorkloadIdentity"}, want: true},
		{reason: "deleting, served", conds: []kubeflowv1.ProfileCondition{core}, deleting: true, want: true},
		{reason: "deleting, never served", deleting: true},
		{reason: "deleting, its upstream kind served and cleaned up", conds: []kubeflowv1.ProfileCondition{core, wi}, plugins: listsWI, deleting: true, want: true},
		{reason: "deleting, its upstream kind never served", conds: []kubeflowv1.ProfileCondition{core}, plugins: listsWI, deleting: true},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			r := &Reconciler{def: plugins.Definition{Plugin: plugins.Funcs{KindName: "core"}, Upstream: true}, hostConfig: handOverConfig{on: !tt.off}, status: &StatusWriter{}}
			p := &kubeflowv1.Profile{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: gen, Finalizers: []string{"profile-finalizer"}},
				Spec:       kubeflowv1.ProfileSpec{Plugins: tt.plugins},
				Status:     kubeflowv1.ProfileStatus{Conditions: tt.conds},
			}
			if tt.finalizers != nil {
				p.Finalizers = tt.finalizers
			}
			if tt.deleting {
				p.DeletionTimestamp = &now
			}
			if got := r.handOverDue(p); got != tt.want {
				t.Errorf("handOverDue = %t, want %t", got, tt.want)
			}
		})
	}
}
