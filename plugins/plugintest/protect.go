package plugintest

// This file holds what "protection never drops" protects: what the step
// before and the step after hold alike, by name, whatever its content.

import (
	"context"
	"encoding/json"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// protects returns what must be present at every moment between two
// states (values of run.state): every key both hold, an object whose
// content changes included (a quota that is tightened is never absent, a
// Pod Security label that changes its level never leaves the namespace).
// An object whose change the API server refuses to make in place (a
// RoleBinding's roleRef) may be deleted and made again, and is left out.
func (r *run) protects(ctx context.Context, before, after map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range before {
		now, ok := after[k]
		if !ok {
			continue
		}
		if now != v && !strings.HasPrefix(k, "observed ") && !r.inPlace(ctx, now) {
			continue
		}
		out[k] = v
	}
	return out
}

// inPlace reports whether the object that state (a value of run.state)
// describes can be changed into it in place from what the API server
// holds now, asked with a dry-run update. When nothing of the name is
// there, or the answer is not a refusal of the change, it can.
func (r *run) inPlace(ctx context.Context, state string) bool {
	s := strings.ReplaceAll(state, "<profile>", r.profile.Name)
	s = strings.ReplaceAll(s, "<uid>", string(r.profile.UID))
	want := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &want.Object); err != nil {
		return true
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(want.GroupVersionKind())
	if err := r.h.Client.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
		return true
	}
	want.SetResourceVersion(live.GetResourceVersion())
	want.SetUID(live.GetUID())
	if data, ok := want.Object["data"]; ok && want.GetKind() == "Secret" {
		delete(want.Object, "data") // normalized holds it decoded
		want.Object["stringData"] = data
	}
	return !apierrors.IsInvalid(r.h.Client.Update(ctx, want, client.DryRunAll))
}
