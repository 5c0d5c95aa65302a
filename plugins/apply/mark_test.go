package apply_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// strippedReader reads through c and drops the managed fields, as the
// host's cache of watched kinds does.
type strippedReader struct{ client.Reader }

func (s strippedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := s.Reader.Get(ctx, key, obj, opts...)
	obj.SetManagedFields(nil)
	return err
}

// Labels and annotations on a cluster-scoped object the plugin does not
// own, against a real API server: exactly the wanted keys under the
// plugin's field manager, nothing sent when they hold, a key no longer
// wanted removed unless another manager holds it too, and all of the
// plugin's keys given up by Unmark.
func TestMarkForeignObject(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	const name, kind = "team", "meta"
	hand := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"team.example.org/note": "by-hand"}, Annotations: map[string]string{"owner": "alice"}}}
	if err := env.Client.Create(ctx, hand); err != nil {
		t.Fatal(err)
	}
	counter := &testenv.Counter{}
	c, err := client.New(counter.Counting(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	a := apply.New(c, kind, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "p1"}}, nil)
	obj := plugins.Foreign{GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Name: name}
	type state struct{ Labels, Annotations map[string]string }
	get := func() state {
		t.Helper()
		var ns corev1.Namespace
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
			t.Fatal(err)
		}
		delete(ns.Labels, "kubernetes.io/metadata.name")
		return state{ns.Labels, ns.Annotations}
	}
	mark := func(r client.Reader, want plugins.Marks, action plugins.Action) {
		t.Helper()
		counter.Reset()
		ch, err := a.Mark(ctx, r, obj, want)
		if err != nil || ch.Action != action {
			t.Fatalf("Mark(%v) = %v, %v; want %s", want, ch, err, action)
		}
		if sent := len(counter.Mutating()) > 0; sent != (action == plugins.Configured) {
			t.Errorf("Mark(%v) %s sent %v", want, action, counter.Mutating())
		}
	}

	mark(c, plugins.Marks{Labels: map[string]string{"a": "1", "b": "2"}, Annotations: map[string]string{"x": "1"}}, plugins.Configured)
	want := state{
		Labels:      map[string]string{"team.example.org/note": "by-hand", "a": "1", "b": "2"},
		Annotations: map[string]string{"owner": "alice", "x": "1"},
	}
	if diff := cmp.Diff(want, get()); diff != "" {
		t.Errorf("after Mark (-want +got):\n%s", diff)
	}
	mark(c, plugins.Marks{Labels: map[string]string{"a": "1", "b": "2"}, Annotations: map[string]string{"x": "1"}}, plugins.Unchanged)

	// Another tool applies a with the same value: both hold it now.
	if err := env.Client.Apply(ctx, corev1ac.Namespace(name).WithLabels(map[string]string{"a": "1"}), client.FieldOwner("other-tool")); err != nil {
		t.Fatal(err)
	}
	mark(c, plugins.Marks{Annotations: map[string]string{"x": "1"}}, plugins.Configured)
	want.Labels = map[string]string{"team.example.org/note": "by-hand", "a": "1"}
	if diff := cmp.Diff(want, get()); diff != "" {
		t.Errorf("after dropping a and b (-want +got):\n%s", diff)
	}

	// Without managed fields only the values tell: x is kept until a write.
	mark(strippedReader{c}, plugins.Marks{}, plugins.Unchanged)
	if got := get().Annotations["x"]; got != "1" {
		t.Errorf("annotation x = %q after a Mark that read no managed fields, want it kept", got)
	}

	counter.Reset()
	if ch, err := a.Unmark(ctx, c, obj); err != nil || ch.Action != plugins.Configured {
		t.Fatalf("Unmark = %v, %v; want configured", ch, err)
	}
	want.Annotations = map[string]string{"owner": "alice"}
	if diff := cmp.Diff(want, get()); diff != "" {
		t.Errorf("after Unmark (-want +got):\n%s", diff)
	}
	counter.Reset()
	if ch, err := a.Unmark(ctx, c, obj); err != nil || ch.Action != plugins.Unchanged || len(counter.Mutating()) != 0 {
		t.Errorf("second Unmark = %v, %v, requests %v; want unchanged and none", ch, err, counter.Mutating())
	}
	if ch, err := a.Unmark(ctx, strippedReader{c}, obj); err != nil || ch.Action != plugins.Configured {
		t.Errorf("Unmark that reads no managed fields = %v, %v; want the empty configuration sent", ch, err)
	}
	if diff := cmp.Diff(want, get()); diff != "" {
		t.Errorf("after an Unmark of nothing (-want +got):\n%s", diff)
	}

	missing := obj
	missing.Name = "not-yet"
	var me *plugins.ForeignMissingError
	if _, err := a.Mark(ctx, c, missing, plugins.Marks{Labels: map[string]string{"a": "1"}}); !errors.As(err, &me) || plugins.IsTerminal(err) {
		t.Errorf("Mark on a missing object = %v, want a retried ForeignMissingError", err)
	}
	if ch, err := a.Unmark(ctx, c, missing); err != nil || ch.Action != plugins.Unchanged {
		t.Errorf("Unmark on a missing object = %v, %v; want unchanged", ch, err)
	}
}
