package apply_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// recall is a WriteObserver that recalls one hash for every object, as a
// host does for a write whose watch event has not come yet.
type recall struct{ hash string }

func (recall) Writing(client.Object)                      {}
func (recall) Wrote(client.Object, string, error)         {}
func (r recall) Unseen(client.Object) (string, bool)      { return r.hash, true }
func (e *createEnv) behind(names ...string) client.Client { return cacheBehind(e.client, names...) }

// cacheBehind returns c with a cache that does not show the ConfigMaps
// named yet, as right after our own write of them.
func cacheBehind(c client.Client, names ...string) client.Client {
	return behindClient{Client: c, names: names}
}

type behindClient struct {
	client.Client
	names []string
}

func (b behindClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if slices.Contains(b.names, key.Name) {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	return b.Client.Get(ctx, key, obj, opts...)
}

// A pass that follows its own write before the cache shows it sends
// nothing for an object the host recalls writing with the same hash; with
// another hash it proves ownership as always: ours is applied, theirs is
// left untouched.
func TestRecalledWriteSendsNothing(t *testing.T) {
	const ns = "recall"
	e := startCreateEnv(t, ns)
	ctx := t.Context()
	desired := func(name, mode string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap(name, ns).WithData(map[string]string{"mode": mode})
	}
	if _, err := e.applier(true).Apply(ctx, desired("ours", "on")); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ours"}, &cm); err != nil {
		t.Fatal(err)
	}
	written := cm.Annotations[plugins.AnnotationAppliedHash]
	applier := func(hash string) *apply.Applier {
		return apply.New(e.behind("ours", "theirs"), "settings", e.profile, e.owns,
			apply.WithScheme(e.env.Scheme), apply.WithLiveReader(e.env.Client), apply.WithWriteObserver(recall{hash: hash}))
	}

	e.counter.Reset()
	res, err := applier(written).Apply(ctx, desired("ours", "on"))
	if err != nil || res.Count(plugins.Unchanged) != 1 {
		t.Fatalf("same hash recalled: Apply = %s, %v; want 1 unchanged", res.Summary(), err)
	}
	if got := e.counter.String(); got != "0 requests" {
		t.Errorf("same hash recalled: sent %s, want none", got)
	}

	res, err = applier(written).Apply(ctx, desired("ours", "off"))
	if err != nil || res.Count(plugins.Configured) != 1 {
		t.Fatalf("another hash recalled: Apply = %s, %v; want 1 configured", res.Summary(), err)
	}
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ours"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["mode"] != "off" {
		t.Errorf("another hash recalled: data %v, want mode off", cm.Data)
	}

	// An object of the name that is not ours, whatever the recall says of
	// an earlier write, is never written.
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Data: map[string]string{"mode": "theirs"}}
	if err := e.env.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	res, err = applier(written).Apply(ctx, desired("theirs", "ours"))
	if res.Count(plugins.Skipped) != 1 || plugins.ReasonOf(err, "") != plugins.ReasonConflict {
		t.Errorf("foreign object, another hash recalled: Apply = %s, %v; want 1 skipped with a Conflict", res.Summary(), err)
	}
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "theirs"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["mode"] != "theirs" || len(cm.Labels) != 0 {
		t.Errorf("foreign object: data %v, labels %v; want it untouched", cm.Data, cm.Labels)
	}
}
