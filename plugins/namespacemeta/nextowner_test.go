package namespacemeta_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
)

// A Profile name is not an identity across time. The keys one owner's
// Profile set stay on a namespace that outlives it only until the host
// hears of a Profile of that name again: the next Profile of another owner
// cannot mark a namespace, nor take the first owner's keys off one, that still names the first owner,
// and once the platform hands the namespace over, the next owner's pass
// leaves none of the first owner's keys behind.
func TestNextOwnerOfTheNameGetsNothingOfThePrevious(t *testing.T) {
	name := newNamespace(t, "next")
	first := newPasses(t, name, hostDefaults(t))
	if _, err := first.apply(map[string]string{"example.org/cost-centre": "cc-alice", "istio.io/rev": "canary"}, map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=alice"}); err != nil {
		t.Fatal(err)
	}
	// The first Profile goes without a Revoke (deleted while the plugin was
	// off, or the host down): its keys are still there.
	left := namespaceMeta(t, name)

	next := newPasses(t, name, hostDefaults(t))
	next.profile.UID = types.UID("uid-next-" + name)
	next.profile.Spec.Owner.Name = "mallory@example.org"
	_, err := next.apply(map[string]string{"example.org/cost-centre": "cc-mallory"}, nil)
	var te *plugins.TerminalError
	if !errors.As(err, &te) || te.Reason != plugins.ReasonConflict {
		t.Fatalf("next owner's Apply on the first owner's namespace = %v; want a Conflict", err)
	}
	next.counter.Reset()
	if res, err := next.revoke(); err != nil || res.Count(plugins.Configured) != 0 || len(next.counter.Mutating()) != 0 {
		t.Fatalf("next owner's Revoke on the first owner's namespace = %+v, %v, requests %v; want nothing done", res, err, next.counter.Mutating())
	}
	if diff := cmp.Diff(left, namespaceMeta(t, name)); diff != "" {
		t.Errorf("the first owner's namespace changed for the next owner (-before +after):\n%s", diff)
	}

	// The platform hands the namespace over by its owner annotation.
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Annotations[core.AnnotationOwner] = "mallory@example.org"
	if err := env.Client.Update(t.Context(), &ns, client.FieldOwner("platform-admin")); err != nil {
		t.Fatal(err)
	}
	if _, err := next.apply(map[string]string{"example.org/cost-centre": "cc-mallory"}, nil); err != nil {
		t.Fatalf("next owner's Apply after the hand-over: %v", err)
	}
	got := namespaceMeta(t, name)
	if got.Labels["example.org/cost-centre"] != "cc-mallory" {
		t.Errorf("labels %v: want the next owner's cost centre", got.Labels)
	}
	if _, ok := got.Labels["istio.io/rev"]; ok {
		t.Errorf("labels %v: the first owner's istio.io/rev stayed for the next owner", got.Labels)
	}
	if _, ok := got.Annotations["scheduler.alpha.kubernetes.io/node-selector"]; ok {
		t.Errorf("annotations %v: the first owner's node selector stayed for the next owner", got.Annotations)
	}
	if got.Labels["team.example.org/note"] != "by-hand" {
		t.Errorf("labels %v: a key set by hand must stay", got.Labels)
	}
}
