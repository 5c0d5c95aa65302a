package plugintest

// This file holds what must hold at every moment of a plan, not only at
// its end: no grant beyond the steps' own, no user data deleted that the
// step keeps; and what a deleted Profile may leave.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// watcher is checked after every write of a plan.
type watcher struct {
	r *run
	// grants are the grants the step before or the step after holds, in
	// the generic form.
	grants map[string]bool
	// data are the identities of the user data the step keeps, by name as
	// the run sees it: what was there when the step began, and what the
	// plan made since, from the first check that saw it; keeps are the
	// names (generic) of the user data the step keeps.
	data  map[string]string
	keeps map[string]bool
	// kept are the grants, and protected what the plugin holds (objects
	// and what Observe reports, in the generic form), that the step before
	// and the step after hold alike: present at every moment.
	kept      map[string]bool
	protected map[string]string

	mu       sync.Mutex
	findings []string
	// last are the grants at the last check.
	last map[string]bool
}

// newWatch watches r through step s of base, from step from (none when
// negative).
func (r *run) newWatch(ctx context.Context, base *baseline, from, s int) (*watcher, error) {
	w := &watcher{r: r, grants: map[string]bool{}, data: map[string]string{}, keeps: map[string]bool{}, kept: map[string]bool{}, protected: map[string]string{}}
	for g := range base.grants[s] {
		w.grants[g] = true
	}
	if from >= 0 {
		for g := range base.grants[from] {
			w.grants[g] = true
			if base.grants[s][g] {
				w.kept[g] = true
			}
		}
		w.protected = r.protects(ctx, base.states[from], base.states[s])
	}
	last, err := r.grants(ctx)
	if err != nil {
		return nil, err
	}
	w.last = last
	if r.sc.Data == nil {
		return w, nil
	}
	data, err := r.sc.Data(ctx, r.profile.Name)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	for name := range base.data[s] {
		w.keeps[name] = true
	}
	for name, id := range data {
		if w.keeps[r.generic(name)] {
			w.data[name] = id
		}
	}
	return w, nil
}

// check looks once, after a write or an outside call (call); a violation
// is kept for the plan to report.
func (w *watcher) check(ctx context.Context, call bool) {
	var found []string
	grants, err := w.r.grants(ctx)
	if err != nil {
		found = append(found, "grants: "+err.Error())
	}
	for g := range grants {
		if !w.grants[g] {
			found = append(found, "grant: "+g+" was given, which neither the step before nor this one gives")
		}
	}
	for g := range w.kept {
		if !grants[g] {
			found = append(found, "protection: grant "+g+", which the step before and this one give, was taken away")
		}
	}
	w.mu.Lock()
	before := w.last
	w.last = grants
	w.mu.Unlock()
	if call && err == nil {
		found = append(found, w.checkCall(ctx, before, grants)...)
	}
	found = append(found, w.checkProtected(ctx)...)
	found = append(found, w.checkData(ctx)...)
	if len(found) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range found {
		if !slices.Contains(w.findings, f) {
			w.findings = append(w.findings, f)
		}
	}
}

// checkData finds the user data the step keeps that was deleted since the
// step began, or since the plan made it: data made during the plan (by
// the pass a crash cut short, say) is the tenant's from the moment it
// exists, and a pass that decides from a stale view may not delete it
// either, not even to make it again.
func (w *watcher) checkData(ctx context.Context) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.r.sc.Data == nil || len(w.keeps) == 0 {
		return nil
	}
	data, err := w.r.sc.Data(ctx, w.r.profile.Name)
	if err != nil {
		return []string{"data: " + err.Error()}
	}
	var found []string
	for name, id := range w.data {
		switch now, ok := data[name]; {
		case !ok:
			found = append(found, "user data: "+w.r.generic(name)+" was deleted, which the step keeps")
		case now != id:
			found = append(found, "user data: "+w.r.generic(name)+" was deleted and made again ("+id+" became "+now+")")
		}
	}
	for name, id := range data {
		if _, seen := w.data[name]; !seen && w.keeps[w.r.generic(name)] {
			w.data[name] = id // made during the plan: protected from now on
		}
	}
	slices.Sort(found)
	return found
}

// checkProtected finds what the step before and this one hold alike
// and that is missing now: an object, or a key Observe reports (a label
// that admission reads, say).
func (w *watcher) checkProtected(ctx context.Context) []string {
	if len(w.protected) == 0 {
		return nil
	}
	state, err := w.r.state(ctx)
	if err != nil {
		return []string{"state: " + err.Error()}
	}
	var found []string
	for k := range w.protected {
		if _, ok := state[k]; !ok {
			found = append(found, "protection: "+k+", which the step before and this one hold alike, was gone")
		}
	}
	slices.Sort(found)
	return found
}

// grants returns every grant the plugin gives for the Profile, in the
// generic form: the subjects of its RoleBindings, the rules of its
// AuthorizationPolicies, and what Scenario.Grants reports.
func (r *run) grants(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	access := func(gvk schema.GroupVersionKind) bool {
		return gvk.Kind == "RoleBinding" || gvk.Kind == "AuthorizationPolicy"
	}
	if err := r.owned(ctx, access, func(_ string, u unstructured.Unstructured) {
		for _, g := range grantsOf(u) {
			out[r.generic(g)] = true
		}
	}); err != nil {
		return nil, err
	}
	if r.sc.Grants != nil {
		gs, err := r.sc.Grants(ctx, r.profile.Name)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			out[r.generic(g)] = true
		}
	}
	return out, nil
}

// grantsOf names the access u gives: one grant per subject of a
// RoleBinding, one per rule of an AuthorizationPolicy (with its action and
// selector, which decide what the rule admits).
func grantsOf(u unstructured.Unstructured) []string {
	name := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	var out []string
	switch u.GetKind() {
	case "RoleBinding":
		kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind")
		role, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			out = append(out, fmt.Sprintf("%s: %s %s to %s", name, kind, role, compact(s)))
		}
	case "AuthorizationPolicy":
		action, _, _ := unstructured.NestedString(u.Object, "spec", "action")
		selector, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "selector")
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		for _, rule := range rules {
			out = append(out, fmt.Sprintf("%s: %s for %s: %s", name, cmp.Or(action, "ALLOW"), compact(selector), compact(rule)))
		}
	}
	return out
}

// compact is v as JSON.
func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// leftBehind returns what the plugin still holds for a deleted Profile
// that nothing will take: an object without an owner reference to the
// Profile (the garbage collector takes those that have one), and outside
// state that is not retained user data.
func (r *run) leftBehind(ctx context.Context) ([]string, error) {
	var out []string
	if err := r.owned(ctx, func(schema.GroupVersionKind) bool { return true }, func(kind string, u unstructured.Unstructured) {
		if !r.collected(u) && u.GetDeletionTimestamp() == nil {
			out = append(out, kind+" "+r.generic(u.GetNamespace()+"/"+u.GetName())+" has no owner reference to the Profile")
		}
	}); err != nil {
		return nil, err
	}
	if r.sc.Observe == nil {
		return out, nil
	}
	seen, err := r.sc.Observe(ctx, r.profile.Name)
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	for k := range seen {
		if !slices.ContainsFunc(r.sc.Retained, func(p string) bool { return strings.HasPrefix(r.generic(k), p) }) {
			out = append(out, "observed "+r.generic(k)+" outlives the Profile")
		}
	}
	slices.Sort(out)
	return out, nil
}
