package reconcilers_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// liveReads is what a pass read of one ConfigMap through its request's
// client and through its Live reader.
type liveReads struct {
	mu                   sync.Mutex
	passes               int
	cached, live, noLive error
}

// readingBoth is a plugin that owns ConfigMaps (so that the host's cache
// holds only those with its labels) and reads the ConfigMap named name in
// the Profile's namespace through both readers of its request.
func readingBoth(kind, name string, got *liveReads) plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: kind, ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
			key := client.ObjectKey{Namespace: plugins.Namespace(req.Profile), Name: name}
			cached := req.Client.Get(ctx, key, &corev1.ConfigMap{})
			var live error
			if req.Live != nil {
				live = req.LiveReader().Get(ctx, key, &corev1.ConfigMap{})
			}
			got.mu.Lock()
			defer got.mu.Unlock()
			got.passes++
			got.cached, got.live = cached, live
			if req.Live == nil {
				got.noLive = errors.New("the request has no Live reader")
			}
			return plugins.Result{}, nil
		}},
		Owns: []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	}
}

// A pass reads through its request's Live reader what the API server
// holds: a ConfigMap someone else made, which the host's cache (our objects
// only) does not show.
func TestPassesReadThroughLiveWhatTheCacheDoesNotHold(t *testing.T) {
	got := &liveReads{}
	testhost.Start(t, env, testhost.Plugin{Def: readingBoth("liveread", "theirs", got)})
	name := "live-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry("liveread", ""))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "theirs"}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	testhost.WaitCondition(t, env.Client, name, "LivereadReady", plugins.ConditionTrue, "")
	// A later pass, after the ConfigMap exists.
	poke := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"poke":"1"}}}`))
	if err := env.Client.Patch(t.Context(), getProfile(t, name), poke); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		got.mu.Lock()
		defer got.mu.Unlock()
		return got.passes >= 2 && got.live == nil, "live read: " + errString(got.live)
	})
	got.mu.Lock()
	defer got.mu.Unlock()
	if got.noLive != nil {
		t.Fatal(got.noLive)
	}
	if !apierrors.IsNotFound(got.cached) {
		t.Errorf("the read through the request's client answered %v, want NotFound: the cache holds our ConfigMaps only, so this test shows nothing", got.cached)
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
