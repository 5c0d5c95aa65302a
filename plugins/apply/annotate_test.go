package apply_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// staleReader answers every read with the metadata it was given, as a cache
// that has not yet seen a deletion would.
type staleReader struct{ m *metav1.PartialObjectMetadata }

func (s staleReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.m.DeepCopyInto(obj.(*metav1.PartialObjectMetadata))
	return nil
}

func (s staleReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not supported")
}

// The annotation helper against a real API server: one key owned by the
// plugin's field manager beside a hand-written one, no request when it holds,
// never a created object, and removal by an empty apply.
func TestAnnotateForeignObject(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	const ns, kind, key = "team", "identity", "example.org/role"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default-editor", Namespace: ns, Annotations: map[string]string{"team.example.org/note": "by hand"}}}
	if err := env.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	counter := &testenv.Counter{}
	c, err := client.New(counter.Counting(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: "p1"}}
	a := apply.New(c, kind, p, nil)
	obj := plugins.Foreign{GVK: corev1.SchemeGroupVersion.WithKind("ServiceAccount"), Namespace: ns, Name: "default-editor"}

	get := func() *corev1.ServiceAccount {
		t.Helper()
		var got corev1.ServiceAccount
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sa), &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}

	ch, err := a.Annotate(ctx, c, obj, map[string]string{key: "arn:1"})
	if err != nil || ch.Action != plugins.Configured {
		t.Fatalf("Annotate = %v, %v; want configured", ch, err)
	}
	got := get()
	if diff := cmp.Diff(map[string]string{"team.example.org/note": "by hand", key: "arn:1"}, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if len(got.Labels) != 0 || len(got.OwnerReferences) != 0 {
		t.Errorf("labels %v, owner references %v: the helper must write the annotation only", got.Labels, got.OwnerReferences)
	}
	var ours []string
	for _, mf := range got.ManagedFields {
		if mf.Manager == plugins.FieldManagerFor(kind) {
			ours = append(ours, string(mf.Operation)+" "+string(mf.FieldsV1.Raw))
		}
	}
	if want := []string{`Apply {"f:metadata":{"f:annotations":{"f:` + key + `":{}}}}`}; !slices.Equal(ours, want) {
		t.Errorf("fields of %s = %v, want %v", plugins.FieldManagerFor(kind), ours, want)
	}

	counter.Reset()
	ch, err = a.Annotate(ctx, c, obj, map[string]string{key: "arn:1"})
	if err != nil || ch.Action != plugins.Unchanged {
		t.Fatalf("second Annotate = %v, %v; want unchanged", ch, err)
	}
	if m := counter.Mutating(); len(m) != 0 {
		t.Errorf("second Annotate sent %v, want nothing", m)
	}

	ch, err = a.Annotate(ctx, c, obj, map[string]string{key: "arn:2"})
	if err != nil || ch.Action != plugins.Configured || get().Annotations[key] != "arn:2" {
		t.Fatalf("changed Annotate = %v, %v, value %q; want configured arn:2", ch, err, get().Annotations[key])
	}

	ch, err = a.Unannotate(ctx, c, obj, key)
	if err != nil || ch.Action != plugins.Configured {
		t.Fatalf("Unannotate = %v, %v; want configured", ch, err)
	}
	if diff := cmp.Diff(map[string]string{"team.example.org/note": "by hand"}, get().Annotations); diff != "" {
		t.Errorf("annotations after Unannotate (-want +got):\n%s", diff)
	}
	counter.Reset()
	if ch, err = a.Unannotate(ctx, c, obj, key); err != nil || ch.Action != plugins.Unchanged || len(counter.Mutating()) != 0 {
		t.Errorf("second Unannotate = %v, %v, requests %v; want unchanged and none", ch, err, counter.Mutating())
	}

	t.Run("a missing object is reported, not created", func(t *testing.T) {
		missing := obj
		missing.Name = "not-yet"
		_, err := a.Annotate(ctx, c, missing, map[string]string{key: "arn:1"})
		var me *plugins.ForeignMissingError
		if !errors.As(err, &me) || plugins.IsTerminal(err) {
			t.Errorf("Annotate on a missing object = %v, want a retried ForeignMissingError", err)
		}
		var sa corev1.ServiceAccount
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "not-yet"}, &sa); !apierrors.IsNotFound(err) {
			t.Errorf("service account not-yet: %v, want not found", err)
		}
	})

	t.Run("an object deleted after the read is not created again", func(t *testing.T) {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(obj.GVK)
		if err := c.Get(ctx, client.ObjectKeyFromObject(sa), m); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(ctx, sa); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Annotate(ctx, staleReader{m}, obj, map[string]string{key: "arn:3"}); err == nil {
			t.Error("Annotate with a stale read of a deleted object succeeded")
		}
		var got corev1.ServiceAccount
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sa), &got); !apierrors.IsNotFound(err) {
			t.Errorf("service account after Annotate of a deleted one: %v (annotations %v), want not found", err, got.Annotations)
		}
	})
}
