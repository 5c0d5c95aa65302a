package serviceaccounts_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/serviceaccounts"
)

// objects answers Annotate and Unannotate as the Applier does: a missing
// service account is an error with no action, one that already holds the
// marks is Unchanged, any other is Configured.
type objects struct {
	plugins.Objects
	missing, holds string
}

func (o objects) answer(obj plugins.Foreign) (plugins.Change, error) {
	c := plugins.Change{Kind: obj.GVK.Kind, Namespace: obj.Namespace, Name: obj.Name}
	switch obj.Name {
	case o.missing:
		return c, &plugins.ForeignMissingError{Object: obj}
	case o.holds:
		c.Action = plugins.Unchanged
	default:
		c.Action = plugins.Configured
	}
	return c, nil
}

func (o objects) Annotate(_ context.Context, _ client.Reader, obj plugins.Foreign, _ map[string]string) (plugins.Change, error) {
	return o.answer(obj)
}

func (o objects) Unannotate(_ context.Context, _ client.Reader, obj plugins.Foreign, _ ...string) (plugins.Change, error) {
	return o.answer(obj)
}

func request() plugins.Request {
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	return plugins.Request{Profile: p, Objects: objects{missing: "gone", holds: "default-viewer"}}
}

func change(name string, a plugins.Action) plugins.Change {
	return plugins.Change{Kind: "ServiceAccount", Namespace: "team-a", Name: name, Action: a}
}

// TestAnnotateCountsWhatItTouched: the result names each service account
// the pass read, with what was done to it; a missing one is in the error,
// not among the changes, and does not stop the others.
func TestAnnotateCountsWhatItTouched(t *testing.T) {
	res, err := serviceaccounts.Annotate(t.Context(), request(), []string{"default-editor", "gone", "default-viewer"}, map[string]string{"k": "v"})
	var missing *plugins.ForeignMissingError
	if !errors.As(err, &missing) || missing.Object.Name != "gone" {
		t.Errorf("error = %v, want the missing service account gone", err)
	}
	want := []plugins.Change{change("default-editor", plugins.Configured), change("default-viewer", plugins.Unchanged)}
	if diff := cmp.Diff(want, res.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// TestUnannotateCountsOnlyWhatItChanged: giving up keys a service account
// no longer carries is no change.
func TestUnannotateCountsOnlyWhatItChanged(t *testing.T) {
	res, err := serviceaccounts.Unannotate(t.Context(), request(), []string{"default-editor", "default-viewer"}, "k")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]plugins.Change{change("default-editor", plugins.Configured)}, res.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
