package apply_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// Zero values through the host's cache, which keeps only our managed fields:
// a zero the API server drops on the way in (an empty list) is in sync and
// costs no request; a zero that a hand edit removes (an empty string, a
// false) is put back by the next pass.
//
// The same holds when the Applier reads its objects as metadata only, as
// the host caches kinds no plugin reads whole: our managed fields tell it.
func TestZeroValuesRemovedByHandArePutBack(t *testing.T) {
	t.Run("whole", func(t *testing.T) { zeroValuesPutBack(t, false) })
	t.Run("metadata only", func(t *testing.T) { zeroValuesPutBack(t, true) })
}

func zeroValuesPutBack(t *testing.T, metadataOnly bool) {
	const ns, kind = "zero", "zeros"
	srv := startCachedServer(t, ns)
	env, counter, informers, c := srv.env, srv.counter, srv.informers, srv.client
	ctx := t.Context()
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: "p1"}}
	desired := []runtime.ApplyConfiguration{
		corev1ac.ConfigMap("settings", ns).WithData(map[string]string{"feature": "", "mode": "on"}),
		corev1ac.ServiceAccount("runner", ns).WithAutomountServiceAccountToken(false),
		apply.Encoded(map[string]any{
			"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
			"metadata": map[string]any{"name": "closed", "namespace": ns},
			"spec":     map[string]any{"podSelector": map[string]any{}, "ingress": []any{}, "policyTypes": []any{"Ingress"}},
		}),
	}
	owns := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	}
	sync := func() plugins.Result {
		t.Helper()
		opts := []apply.Option{apply.WithLiveReader(env.Client), apply.WithScheme(env.Scheme)}
		if metadataOnly {
			opts = append(opts, apply.WithMetadataOnly(owns...))
		}
		a := apply.New(c, kind, p, owns, opts...)
		res, err := a.Sync(ctx, desired...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	inSync := func(want int) {
		t.Helper()
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			counter.Reset()
			res := sync()
			return res.Count(plugins.Unchanged) == want && len(counter.Mutating()) == 0, fmt.Sprintf("%s; writes %v", res.Summary(), counter.Mutating())
		})
	}

	if res := sync(); res.Count(plugins.Created) != 3 {
		t.Fatalf("first pass: %s, want 3 created", res.Summary())
	}
	// The NetworkPolicy's empty ingress list is gone on the server; it is
	// ours all the same, so every pass after the cache caught up is free.
	inSync(3)

	var cached corev1.ConfigMap
	if err := informers.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &cached); err != nil {
		t.Fatal(err)
	}
	for _, e := range cached.ManagedFields {
		if !strings.HasPrefix(e.Manager, plugins.FieldManagerPrefix) {
			t.Errorf("the cache kept the managed fields of %q", e.Manager)
		}
	}

	byHand := func(obj client.Object, patch string) {
		t.Helper()
		if err := env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
	}
	byHand(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}, `{"data":{"feature":null}}`)
	byHand(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "runner"}}, `{"automountServiceAccountToken":null}`)
	// The cache may see one edit a pass before the other, so passes run
	// until the live objects hold our values again; the final inSync then
	// shows that the passes settle.
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		res := sync()
		var cm corev1.ConfigMap
		var sa corev1.ServiceAccount
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &cm); err != nil {
			return false, err.Error()
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "runner"}, &sa); err != nil {
			return false, err.Error()
		}
		v, ok := cm.Data["feature"]
		back := ok && v == "" && sa.AutomountServiceAccountToken != nil && !*sa.AutomountServiceAccountToken
		return back, fmt.Sprintf("after the hand edits: %s; ConfigMap data %v, automountServiceAccountToken %v; want the empty feature and false back",
			res.Summary(), cm.Data, sa.AutomountServiceAccountToken)
	})
	inSync(3)

	// Managed fields cleared by hand: a whole object is compared by its
	// content and is in sync; one read as metadata only tells nothing
	// without them, so it is applied once more, which brings our entry back.
	byHand(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "runner"}}, `{"metadata":{"managedFields":[{}]}}`)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		var cached corev1.ServiceAccount
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "runner"}, &cached); err != nil {
			return false, err.Error()
		}
		return len(cached.ManagedFields) == 0, fmt.Sprintf("managed fields %v, want none after the reset", cached.ManagedFields)
	})
	wantConfigured := 0
	if metadataOnly {
		wantConfigured = 1
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		res := sync()
		return res.Count(plugins.Configured) == wantConfigured && res.Count(plugins.Unchanged) == 3-wantConfigured,
			fmt.Sprintf("after the reset: %s, want %d configured", res.Summary(), wantConfigured)
	})
	inSync(3)
}
