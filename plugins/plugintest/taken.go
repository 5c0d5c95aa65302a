package plugintest

// This file holds the plans in which a name the plugin wants is already
// someone else's: the guards that tell ours from theirs must read what is
// there, and a Conflict must be the end of it, not a retry loop.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// someoneElse is the field manager of the objects a taken plan makes.
const someoneElse = "plugintest-someone-else"

// TakenNames runs, for every object the run without perturbation holds
// after the first step, a plan in which someone else already holds an
// object of that kind and name when the Profile is made: a copy of the
// plugin's, without profilekit's labels, annotations and owner
// references, as a tenant or another controller would make it. The step's
// passes must come, within a few, to a terminal Conflict (which a host
// does not retry until something changes), not retry for ever, and none
// may change or delete that object. Then the other writer deletes it, and the step must settle
// where the run without perturbation does. In a namespace the plugin makes
// itself, which no one can use before the Profile's first pass, someone
// else takes the name once the first step is quiet: deletes the plugin's
// object and makes its own, and the step's next passes (a resync) must
// come to the same terminal Conflict.
func (h Harness) TakenNames(t T, sc Scenario) Plans {
	t.Helper()
	const pattern = "taken"
	base, plans := h.begin(t, sc, pattern)
	var keys []string
	for k := range base.states[0] {
		if !strings.HasPrefix(k, "observed ") && !strings.HasPrefix(k, "Namespace ") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for i, k := range keys {
		if short(i, len(keys)) {
			plans.Skipped++
			continue
		}
		plan := fmt.Sprintf("%s %s step 0 (%s): %s held by someone else", sc.Def.Kind(), pattern, sc.Steps[0].Name, k)
		h.try(&plans, plan, func() bool { return h.taken(t, sc, base, k, plan) })
	}
	return plans
}

// taken runs one plan of TakenNames, for the object key of the first
// step, and reports whether its invariants held.
func (h Harness) taken(t T, sc Scenario, base *baseline, key, plan string) bool {
	t.Helper()
	ctx := quietLogs(t.Context())
	r, err := h.newRun(ctx, sc, "plan")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := r.squatter(base.states[0][key])
	if err != nil {
		t.Fatalf("%s: %v", plan, err)
	}
	if err := r.set(ctx, sc.Steps[0]); err != nil {
		t.Fatal(err)
	}
	if ns := theirs.GetNamespace(); ns != "" {
		err := h.Client.Get(ctx, client.ObjectKey{Name: ns}, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}})
		if apierrors.IsNotFound(err) {
			// A namespace the plugin makes: someone else takes the name
			// there once the plugin made it, deleting the plugin's object
			// (a tenant may, with the rights Kubeflow gives it).
			if _, err := r.quiet(ctx); err != nil {
				fail(t, plan, "before the name was taken: %v", err)
				return false
			}
			if err := gone(ctx, h.Client, theirs.DeepCopy()); err != nil {
				t.Fatalf("%s: %v", plan, err)
			}
		}
	}
	err = h.Client.Create(ctx, theirs, client.FieldOwner(someoneElse))
	if apierrors.IsAlreadyExists(err) {
		return true // the scenario's Setup made it (an earlier version's object): nothing to take
	}
	if err != nil {
		fail(t, plan, "someone else's copy of %s cannot be made: %v", key, err)
		return false
	}
	ok := true
	r.conflict = true
	passes, err := r.quiet(ctx)
	r.conflict = false
	if err != nil {
		fail(t, plan, "with the name taken: %v", err)
		ok = false
	}
	// A write the API server refuses (a create-only apply) may be sent;
	// none that changes the object. Other controllers may change it (a
	// claim bound to a volume), so the writes say what the plugin did.
	for _, p := range passes {
		for _, w := range p {
			if !w.refused && w.Verb != "call" && w.Verb != "deletecollection" && w.Kind+" "+r.generic(w.Namespace+"/"+w.Name) == key {
				fail(t, plan, "safety: %s of someone else's %s", w.Verb, key)
				ok = false
			}
		}
	}
	now := theirs.DeepCopy()
	if err := h.Client.Get(ctx, client.ObjectKeyFromObject(theirs), now); err != nil || now.GetUID() != theirs.GetUID() {
		fail(t, plan, "safety: someone else's %s was deleted (%v)", key, err)
		return false
	}
	// The other writer lets go; the Profile's next event or resync runs it again.
	if err := gone(ctx, h.Client, theirs); err != nil {
		t.Fatalf("%s: %v", plan, err)
	}
	if passes, err = r.quiet(ctx); err != nil {
		fail(t, plan, "after the name was let go: %v", err)
		return false
	}
	state, err := r.state(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(base.states[0], state); diff != "" {
		fail(t, plan, "liveness: once the name was let go, what the plugin holds differs from the run without perturbation (-want +got):\n%s\tthen, to quiet: %v", diff, passes)
		ok = false
	}
	return ok
}

// squatter is the object state (a value of run.state) describes for this
// run, as someone else would make it: without profilekit's labels,
// annotations, owner references and finalizers.
func (r *run) squatter(state string) (*unstructured.Unstructured, error) {
	s := strings.ReplaceAll(state, "<profile>", r.profile.Name)
	s = strings.ReplaceAll(s, "<uid>", string(r.profile.UID))
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		return nil, err
	}
	ours := func(k string) bool {
		return strings.HasPrefix(k, strings.TrimSuffix(plugins.FinalizerPrefix, "/")) || k == plugins.LabelManagedBy
	}
	labels, annotations := u.GetLabels(), u.GetAnnotations()
	for k := range labels {
		if ours(k) {
			delete(labels, k)
		}
	}
	for k := range annotations {
		if ours(k) {
			delete(annotations, k)
		}
	}
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	u.SetOwnerReferences(nil)
	u.SetFinalizers(nil)
	if data, ok := u.Object["data"]; ok && u.GetKind() == "Secret" {
		delete(u.Object, "data") // normalized holds it decoded
		u.Object["stringData"] = data
	}
	return u, nil
}

// gone deletes obj and waits until the API server no longer holds it.
func gone(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return err
	}
	for deadline := time.Now().Add(maxWait); time.Now().Before(deadline); time.Sleep(waitStep) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy())
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("%s %s/%s is still there after %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), maxWait)
}
