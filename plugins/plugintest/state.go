package plugintest

// This file holds what a run compares: what the plugin holds for the
// Profile, in a form two runs share.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// state is what the plugin holds for the Profile: every object of its
// kinds that carries its labels for the Profile (once the Profile is
// deleted, those the garbage collector does not take), as JSON without
// what the API server sets, with the Profile's name and UID replaced, by
// kind and name.
func (r *run) state(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := r.owned(ctx, func(gvk schema.GroupVersionKind) bool { return true }, func(kind string, u unstructured.Unstructured) {
		if u.GetDeletionTimestamp() != nil || r.collected(u) || u.GetLabels()[plugins.LabelRole] == plugins.RoleOutsideState {
			return // gone, the garbage collector's, or the outside-state mechanism's (Observe shows what it stands for)
		}
		if r.sc.Normalize != nil {
			r.sc.Normalize(&u)
		}
		out[kind+" "+r.generic(u.GetNamespace()+"/"+u.GetName())] = r.generic(normalized(u))
	})
	if err != nil {
		return nil, err
	}
	if r.sc.Observe != nil {
		seen, err := r.sc.Observe(ctx, r.profile.Name)
		if err != nil {
			return nil, fmt.Errorf("observe: %w", err)
		}
		for k, v := range seen {
			out["observed "+r.generic(k)] = r.generic(v)
		}
	}
	return out, nil
}

// owned calls each with every object of the plugin's kinds that kinds
// takes and that carries the plugin's labels for the Profile.
func (r *run) owned(ctx context.Context, kinds func(schema.GroupVersionKind) bool, each func(kind string, u unstructured.Unstructured)) error {
	for _, gvk := range r.sc.Def.Owns {
		if !kinds(gvk) {
			continue
		}
		var list unstructured.UnstructuredList
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.h.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(r.sc.Def.Kind(), r.profile.Name)}); err != nil {
			return fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for _, u := range list.Items {
			each(gvk.Kind, u)
		}
	}
	return nil
}

// collected reports whether the garbage collector takes u: the Profile is
// deleted and u names it as its owner.
func (r *run) collected(u unstructured.Unstructured) bool {
	return !r.profile.DeletionTimestamp.IsZero() &&
		slices.ContainsFunc(u.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == r.profile.UID })
}

// generic replaces the Profile's UID and name in s, so that two runs of a
// scenario compare.
func (r *run) generic(s string) string {
	if uid := string(r.profile.UID); uid != "" {
		s = strings.ReplaceAll(s, uid, "<uid>")
	}
	return strings.ReplaceAll(s, r.profile.Name, "<profile>")
}

// normalized is u as JSON without what the API server sets.
func normalized(u unstructured.Unstructured) string {
	obj := u.DeepCopy().Object
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
		unstructured.RemoveNestedField(obj, "metadata", f)
	}
	delete(obj, "status")
	if data, ok := obj["data"].(map[string]any); ok && u.GetKind() == "Secret" {
		// Decoded, so that the Profile's name in a value reads as such.
		decoded := map[string]any{}
		for k, v := range data {
			s, _ := v.(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				decoded[k] = v
				continue
			}
			decoded[k] = string(b)
		}
		obj["data"] = decoded
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

// names returns the keys of states.
func names(states ...map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, s := range states {
		for k := range maps.Keys(s) {
			out[k] = true
		}
	}
	return out
}

// fail reports a violation with the line that reruns its plan.
func fail(t T, plan string, format string, args ...any) {
	t.Helper()
	t.Errorf("%s: %s\n\trerun: %s=%q go test -run '^%s$'", plan, fmt.Sprintf(format, args...), PlanEnv, plan, t.Name())
}
