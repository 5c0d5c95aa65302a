package reconcilers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// configuredKinds is the config of a plugin whose owned kinds its host
// config names.
type configuredKinds struct {
	Account string                    `json:"account"`
	Kinds   []schema.GroupVersionKind `json:"kinds"`
}

// configuredPlugin writes one ServiceAccount, named by its config, and owns
// the kinds its config names rather than any of its own.
func configuredPlugin(kind string) plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{
			KindName: kind,
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				cfg, err := plugins.ConfigOf[configuredKinds](req)
				if err != nil {
					return plugins.Result{}, err
				}
				return req.Objects.Sync(ctx, corev1ac.ServiceAccount(cfg.Account, plugins.Namespace(req.Profile)))
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		NewConfig: func() any { return &configuredKinds{} },
		OwnsFrom: func(hostConfig any) ([]schema.GroupVersionKind, error) {
			return hostConfig.(*configuredKinds).Kinds, nil
		},
	}
}

// The kinds a plugin's host config names are owned like those of Owns:
// written, and watched, so that an object deleted by hand comes back at
// once, long before a resync. One the cluster does not serve keeps the
// controller from starting no more than it keeps prune from working.
func TestOwnedKindsFromTheHostConfig(t *testing.T) {
	kind := "configured"
	defaults, err := json.Marshal(configuredKinds{Account: "robot", Kinds: []schema.GroupVersionKind{
		{Group: "widgets.example.org", Version: "v1", Kind: "Widget"},
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	testhost.Start(t, env, testhost.Plugin{Def: configuredPlugin(kind), Options: []reconcilers.Option{
		reconcilers.WithDefaults(defaults), reconcilers.WithEnabledForAll(nil), reconcilers.WithResync(time.Hour),
	}})
	name := "configured-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil)
	testhost.WaitCondition(t, env.Client, name, plugins.ConditionTypeFor(kind), plugins.ConditionTrue, "")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "robot"}}
	if ok, msg := exists(t, sa); !ok || !plugins.IsOwnedBy(sa.Labels, kind, name) {
		t.Fatalf("ServiceAccount robot: %s, labels %v; want ours", msg, sa.Labels)
	}
	uid := sa.UID
	if err := env.Client.Delete(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 5*time.Second, func() (bool, string) {
		got := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "robot"}}
		ok, msg := exists(t, got)
		return ok && got.UID != uid, "ServiceAccount robot not made again: " + msg
	})
}
