package replicate_test

// This file holds the tests of sources: one that vanishes, and one chosen
// by a selector with Profiles opting in.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/replicate"
)

// TestVanishedSource: when sources are deleted, a source's own policy
// decides what becomes of its copies (kept: Retain, dropped: Delete), and
// the config's decides for a source that sets none (inherited: Delete).
func TestVanishedSource(t *testing.T) {
	run := "gone-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	for _, n := range []string{"kept", "dropped", "inherited"} {
		createSecret(t, src, n, nil, map[string]string{"token": v})
	}
	cfg := replicate.NewConfig()
	cfg.OnSourceDeleted = replicate.SourceDeletedDelete
	kept, dropped := nameSource("kept", src, "kept"), nameSource("dropped", src, "dropped")
	kept.OnSourceDeleted, dropped.OnSourceDeleted = replicate.SourceDeletedRetain, replicate.SourceDeletedDelete
	cfg.Sources = []replicate.Source{kept, dropped, nameSource("inherited", src, "inherited")}
	start(t, run, cfg, 300*time.Millisecond)
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	for _, n := range []string{"kept", "dropped", "inherited"} {
		waitCopy(t, name, n, map[string]string{"token": v})
	}

	for _, n := range []string{"kept", "dropped", "inherited"} {
		s, _ := getSecret(src, n)
		if err := env.Client.Delete(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, replicate.ReasonSourceNotFound)
	for _, w := range []string{"source kept: Secret " + src + "/kept not found, copy kept kept", "source dropped: Secret " + src + "/dropped not found",
		"source inherited: Secret " + src + "/inherited not found"} {
		if !strings.Contains(cond.Message, w) {
			t.Errorf("condition %q does not say %q", cond.Message, w)
		}
	}
	for _, n := range []string{"dropped", "inherited"} {
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, err := getSecret(name, n)
			return apierrors.IsNotFound(err), fmt.Sprintf("the Delete policy's copy %s is still there (%v)", n, err)
		})
	}
	if _, err := getSecret(name, "kept"); err != nil {
		t.Errorf("the Retain policy's copy is gone: %v", err)
	}

	t.Run("a source that comes back is copied again", func(t *testing.T) {
		v2 := secretValue()
		for _, n := range []string{"kept", "dropped", "inherited"} {
			createSecret(t, src, n, nil, map[string]string{"token": v2})
		}
		for _, n := range []string{"kept", "dropped", "inherited"} {
			waitCopy(t, name, n, map[string]string{"token": v2})
		}
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "3 objects in sync")
	})
}

func TestSelectorSourceAndOptIn(t *testing.T) {
	run := "optin-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	createSecret(t, src, "store-a", map[string]string{"store": "yes"}, map[string]string{"key": v})
	createSecret(t, src, "not-picked", nil, map[string]string{"key": secretValue()})
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{{ID: "store", Kind: replicate.KindSecret, Namespace: src,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"store": "yes"}}, CopyPrefix: "s-", OptIn: true}}
	start(t, run, cfg, 300*time.Millisecond)

	in := run + "-in"
	out := run + "-out"
	bad := run + "-bad"
	spec := func(v any) kubeflowv1.Plugin {
		raw, _ := json.Marshal(v)
		return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: replicate.Kind}, Spec: &runtime.RawExtension{Raw: raw}}
	}
	testhost.NewProfile(t, env.Client, in, map[string]string{"run": run}, spec(map[string]any{"include": []string{"store"}}))
	testhost.NewProfile(t, env.Client, out, map[string]string{"run": run})
	testhost.NewProfile(t, env.Client, bad, map[string]string{"run": run}, spec(map[string]any{"sources": []any{map[string]any{"id": "x", "kind": "Secret", "namespace": "kube-system", "name": "admin-token"}}}))

	waitCopy(t, in, "s-store-a", map[string]string{"key": v})
	testhost.WaitCondition(t, env.Client, out, condType, plugins.ConditionTrue, "0 objects in sync")
	cond := testhost.WaitCondition(t, env.Client, bad, condType, plugins.ConditionFalse, plugins.ReasonInvalidSpec)
	if !strings.Contains(cond.Message, "sources") {
		t.Errorf("condition %q does not name the field", cond.Message)
	}

	t.Run("a new object the selector picks is copied", func(t *testing.T) {
		v2 := secretValue()
		createSecret(t, src, "store-b", map[string]string{"store": "yes"}, map[string]string{"key": v2})
		waitCopy(t, in, "s-store-b", map[string]string{"key": v2})
	})
	t.Run("an object that loses the label keeps its copy and is reported", func(t *testing.T) {
		var s corev1.Secret
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: src, Name: "store-b"}, &s); err != nil {
			t.Fatal(err)
		}
		delete(s.Labels, "store")
		if err := env.Client.Update(t.Context(), &s); err != nil {
			t.Fatal(err)
		}
		testhost.WaitCondition(t, env.Client, in, condType, plugins.ConditionFalse, "source store: Secret "+src+"/store-b not found, copy s-store-b kept")
		if _, err := getSecret(in, "s-store-b"); err != nil {
			t.Errorf("copy is gone: %v", err)
		}
	})
	t.Run("opting out removes the copies", func(t *testing.T) {
		testhost.UpdateProfile(t, env.Client, in, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, err := getSecret(in, "s-store-a")
			return apierrors.IsNotFound(err), fmt.Sprintf("copy still there (%v)", err)
		})
	})
	t.Run("no Event and no condition holds a value", func(t *testing.T) {
		var evs eventsv1.EventList
		if err := env.Client.List(t.Context(), &evs); err != nil {
			t.Fatal(err)
		}
		var ps kubeflowv1.ProfileList
		if err := env.Client.List(t.Context(), &ps); err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, e := range evs.Items {
			text.WriteString(e.Note + "\n")
		}
		for _, p := range ps.Items {
			for _, c := range p.Status.Conditions {
				text.WriteString(c.Message + "\n")
			}
		}
		values.Lock()
		defer values.Unlock()
		for _, v := range values.list {
			if strings.Contains(text.String(), v) {
				t.Errorf("a secret value appears in an Event or a condition")
			}
		}
		t.Logf("%d Events and %d Profiles' conditions hold none of %d secret values", len(evs.Items), len(ps.Items), len(values.list))
	})
}

// unlistedCopies fails every list of ConfigMaps and of objects' metadata
// (the plugin's Secrets): the host's cache out of reach for the list of
// the plugin's copies.
type unlistedCopies struct{ plugins.Cluster }

var errUnlisted = errors.New("the cache did not answer (injected)")

func (c unlistedCopies) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	switch l.(type) {
	case *corev1.ConfigMapList, *metav1.PartialObjectMetadataList:
		return errUnlisted
	}
	return c.Cluster.List(ctx, l, opts...)
}

// TestCopiesUnlistedFailThePass: while a pass cannot list the plugin's
// copies, it cannot tell which of them its sources' policies keep: it fails
// with the reason and deletes none, here the copy of a source deleted
// meanwhile, which the Retain policy keeps. Once the copies can be listed,
// that copy is kept as a gone source's.
func TestCopiesUnlistedFailThePass(t *testing.T) {
	run := "unlisted-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	createSecret(t, src, "kept", nil, map[string]string{"token": v})
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{nameSource("kept", src, "kept")}
	h := start(t, run, cfg, 300*time.Millisecond)
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	waitCopy(t, name, "kept", map[string]string{"token": v})

	h.unlisted.Store(true)
	s, _ := getSecret(src, "kept")
	if err := env.Client.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, errUnlisted.Error())
	time.Sleep(time.Second) // passes retried meanwhile
	if _, err := getSecret(name, "kept"); err != nil {
		t.Errorf("the copy while the copies cannot be listed: %v, want it kept", err)
	}

	h.unlisted.Store(false)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "copy kept kept")
	if _, err := getSecret(name, "kept"); err != nil {
		t.Errorf("the copy of the gone source: %v, want it kept", err)
	}
}

// unreadSources fails every read: the sources' caches out of reach.
type unreadSources struct{ client.Reader }

func (unreadSources) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errUnlisted
}

func (unreadSources) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errUnlisted
}

// TestSourcesUnreadKeepTheirCopies: while selector sources of both kinds
// cannot be read, their copies stay, even under the Delete policy, and the
// pass fails with the reason.
func TestSourcesUnreadKeepTheirCopies(t *testing.T) {
	run := "unread-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	shared := map[string]string{"share": "yes"}
	createSecret(t, src, "token", shared, map[string]string{"token": v})
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "settings", Labels: shared}, Data: map[string]string{"mode": "fast"}}
	if err := env.Client.Create(t.Context(), settings); err != nil {
		t.Fatal(err)
	}
	cfg := replicate.NewConfig()
	cfg.OnSourceDeleted = replicate.SourceDeletedDelete
	for _, kind := range []string{replicate.KindSecret, replicate.KindConfigMap} {
		cfg.Sources = append(cfg.Sources, replicate.Source{ID: strings.ToLower(kind), Kind: kind, Namespace: src,
			Selector: &metav1.LabelSelector{MatchLabels: shared}})
	}
	h := start(t, run, cfg, 300*time.Millisecond)
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	waitCopy(t, name, "token", map[string]string{"token": v})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "2 objects in sync")

	h.unread.Store(true)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, errUnlisted.Error())
	time.Sleep(time.Second) // passes retried meanwhile
	if _, err := getSecret(name, "token"); err != nil {
		t.Errorf("the Secret's copy while its source cannot be read: %v, want it kept", err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "settings"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap's copy while its source cannot be read: %v, want it kept", err)
	}
	h.unread.Store(false)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "2 objects in sync")
}
