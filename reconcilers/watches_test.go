package reconcilers_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// watchingServiceAccounts is a plugin that watches the service accounts of
// every namespace, metadata only, and counts those of its Profile's
// namespace on each pass.
func watchingServiceAccounts(kind string, seen *atomic.Int32) plugins.Definition {
	gvk := corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: kind, ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
			var list metav1.PartialObjectMetadataList
			list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
			if err := req.Watched.List(ctx, &list, client.InNamespace(plugins.Namespace(req.Profile))); err != nil {
				return plugins.Result{}, err
			}
			seen.Store(int32(len(list.Items)))
			return plugins.Result{}, nil
		}},
		Watches: []plugins.Watch{{Object: obj, Profiles: func(_ context.Context, o client.Object) []string { return []string{o.GetNamespace()} }}},
	}
}

// Two plugins that watch the same kind share one informer: one list and
// one watch of it, not one each, and both are woken by its events.
func TestPluginsShareTheWatchOfAKind(t *testing.T) {
	var alpha, beta atomic.Int32
	h := testhost.Start(t, env,
		testhost.Plugin{Def: watchingServiceAccounts("alpha", &alpha)},
		testhost.Plugin{Def: watchingServiceAccounts("beta", &beta)},
	)
	name := "share-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry("alpha", ""), entry("beta", ""))
	testhost.WaitCondition(t, env.Client, name, "AlphaReady", plugins.ConditionTrue, "")
	testhost.WaitCondition(t, env.Client, name, "BetaReady", plugins.ConditionTrue, "")
	for _, sa := range []string{"first", "second"} {
		err := env.Client.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: sa}})
		if err != nil {
			t.Fatal(err)
		}
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		a, b := alpha.Load(), beta.Load()
		return a == 2 && b == 2, fmt.Sprintf("service accounts seen: alpha %d, beta %d; want 2 each", a, b)
	})
	// An informer lists and watches with one streaming watch request on
	// the path of every namespace's service accounts; one informer per
	// plugin would send one each.
	if n := h.Counter.Count(http.MethodGet, "/api/v1/serviceaccounts"); n != 1 {
		t.Errorf("%d requests for the service accounts of every namespace, want 1: one informer for both plugins", n)
	}
}
