package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/plugins"
)

// ReasonImmutableField is the condition reason when an object of ours needs
// a change in a field the API server does not let change in place, and the
// object's kind is not one the Applier replaces (see Replaceable).
const ReasonImmutableField = "ImmutableField"

// replaceable are the kinds that nothing holds on to but by name: a pod
// mounts a Secret or ConfigMap by name and sees the new one; a binding
// grants by its subjects and roleRef. Deleting and creating one of them
// loses nothing. A claim's volume, a Service's address or a Job's pods are
// held by what uses them, so those kinds are reported instead.
var replaceable = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
}

// Replaceable reports whether the Applier replaces an object of kind gvk
// whose immutable fields must change: delete it (ours, by UID) and create
// it anew.
func Replaceable(gvk schema.GroupVersionKind) bool {
	for _, k := range replaceable {
		if k == gvk {
			return true
		}
	}
	return false
}

// isImmutable reports whether err is the API server refusing a change to an
// immutable field: "field is immutable" (a Secret's type, any field of an
// immutable Secret, a binding's roleRef) or a kind's own wording such as a
// claim's "spec is immutable after creation".
func isImmutable(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if strings.Contains(c.Message, apivalidation.FieldImmutableErrorMsg) || strings.Contains(c.Message, " is immutable") {
				return true
			}
		}
	}
	return false
}

// replace handles an apply of u that the API server refused because an
// immutable field of live, our object, would change. A replaceable kind is
// deleted while it is still live and ours (deleteOurs) and created anew; any other
// kind is a terminal ImmutableField error naming the object, and nothing is
// deleted.
func (a *Applier) replace(ctx context.Context, live, u *unstructured.Unstructured, change plugins.Change, cause error) (plugins.Change, error) {
	k := keyOf(u)
	if !Replaceable(k.gvk) {
		change.Action = plugins.Skipped
		return change, plugins.Terminalf(ReasonImmutableField,
			"%s %s/%s cannot take the change in place (%v); it is not replaced automatically: delete it to have it made again",
			k.gvk.Kind, k.namespace, k.name, cause)
	}
	return a.recreate(ctx, live, u, change, "to change an immutable field")
}

// renew replaces live, our object of an exclusive kind on which another
// field manager set fields, with u: nothing of the other manager's stays.
func (a *Applier) renew(ctx context.Context, live, u *unstructured.Unstructured, change plugins.Change) (plugins.Change, error) {
	return a.recreate(ctx, live, u, change, "to take away fields another manager set")
}

// recreate deletes live while it is still live and ours (deleteOurs) and
// creates u in its place; why ends the messages.
func (a *Applier) recreate(ctx context.Context, live, u *unstructured.Unstructured, change plugins.Change, why string) (plugins.Change, error) {
	k := keyOf(u)
	deleted, err := a.deleteOurs(ctx, k.gvk, live)
	if err != nil {
		return change, fmt.Errorf("delete %s %s/%s %s: %w", k.gvk.Kind, k.namespace, k.name, why, err)
	}
	if !deleted {
		change.Action = plugins.Skipped
		return change, fmt.Errorf("%s %s/%s changed hands while it was being replaced; left untouched, will look again", k.gvk.Kind, k.namespace, k.name)
	}
	if err := a.create(ctx, u); err != nil {
		return change, fmt.Errorf("create %s %s/%s again after deleting it %s: %w", k.gvk.Kind, k.namespace, k.name, why, err)
	}
	change.Action = plugins.Configured
	log.FromContext(ctx).Info("replaced "+why, "kind", k.gvk.Kind,
		"object", types.NamespacedName{Namespace: k.namespace, Name: k.name})
	return change, nil
}
