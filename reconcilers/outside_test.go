package reconcilers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// vault is a plugin whose only state is outside the cluster: one secret
// engine per Profile, reached through call, which counts the calls and fails
// while down is set.
type vault struct {
	calls   atomic.Int32
	revokes atomic.Int32
	down    atomic.Bool
}

func (v *vault) call(context.Context) error {
	v.calls.Add(1)
	if v.down.Load() {
		return errors.New("connection refused")
	}
	return nil
}

func (v *vault) definition() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{
			KindName: "vault",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				_, err := req.Outside.Ensure(ctx, "Vault", "engine", map[string]string{"path": req.Profile.Name}, v.call)
				return plugins.Result{}, err
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				keys, err := req.Outside.Recorded(ctx)
				if err != nil {
					return plugins.Result{}, err
				}
				for range keys {
					if err := req.Outside.Call(ctx, "Vault", v.call); err != nil {
						return plugins.Result{}, err
					}
					v.revokes.Add(1)
				}
				return plugins.Result{}, req.Outside.Forget(ctx, keys...)
			},
		},
		OutsideState: true,
	}
}

// Outside state is made true once, recorded, left alone while nothing
// changes, verified again on the manual trigger, retried through an outage
// without harm, and removed on revoke.
func TestOutsideStateThroughTheHost(t *testing.T) {
	v := &vault{}
	h := testhost.Start(t, env, testhost.Plugin{Def: v.definition(), Options: []reconcilers.Option{reconcilers.WithResync(200 * time.Millisecond)}})
	name := "vault-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil, entry("vault", ""))
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")

	var record corev1.ConfigMap
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), testhost.RecordKey("vault", p), &record)
		return err == nil, fmt.Sprintf("record: %v", err)
	})
	writes := h.ResyncWrites(t, 5, "vault")
	if n := v.calls.Load(); n != 1 || len(writes) != 0 {
		t.Errorf("after 5 quiet passes: %d outside calls and mutating requests %v; want 1 call in all and none", n, writes)
	}

	// The manual trigger calls again; the system is down, which is reported
	// and retried, and the pass after it comes back records it once more.
	v.down.Store(true)
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Annotations = map[string]string{plugins.AnnotationReverify: "1"}
	})
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionFalse, "VaultError: Vault: connection refused")
	failed := v.calls.Load()
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return v.calls.Load() > failed, "no retry while the system is down"
	})
	v.down.Store(false)
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")
	recovered := v.calls.Load()
	h.ResyncWrites(t, 3, "vault")
	if n := v.calls.Load(); n != recovered {
		t.Errorf("outside calls after recovery went from %d to %d with nothing changed", recovered, n)
	}

	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		p := getProfile(t, name)
		return len(p.Finalizers) == 0, fmt.Sprintf("finalizers %v", p.Finalizers)
	})
	if n := v.revokes.Load(); n != 1 {
		t.Errorf("revoked %d engines, want 1", n)
	}
	if ok, _ := exists(t, &corev1.ConfigMap{ObjectMeta: record.ObjectMeta}); ok {
		t.Error("the record outlived the revoke")
	}
}

// A Profile whose deletion waits on an outside system says so on the
// plugin's condition, with the system's reason, and is let go once the
// system answers again.
func TestWaitingDeletionSaysWhyOnTheCondition(t *testing.T) {
	v := &vault{}
	testhost.Start(t, env, testhost.Plugin{Def: v.definition()})
	name := "vault-del-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil, entry("vault", ""))
	testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionTrue, "")

	v.down.Store(true)
	if err := env.Client.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	cond := testhost.WaitCondition(t, env.Client, name, "VaultReady", plugins.ConditionFalse, "VaultError: revoke waits")
	for _, w := range []string{"finalizer " + plugins.FinalizerPrefix + "vault", "connection refused"} {
		if !strings.Contains(cond.Message, w) {
			t.Errorf("condition %q does not say %q", cond.Message, w)
		}
	}
	if got := getProfile(t, name); got.DeletionTimestamp.IsZero() || len(got.Finalizers) == 0 {
		t.Fatalf("the Profile was let go during the outage: finalizers %v", got.Finalizers)
	}
	if n := v.revokes.Load(); n != 0 {
		t.Errorf("%d revokes counted during the outage", n)
	}

	v.down.Store(false)
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var left kubeflowv1.Profile
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &left)
		return apierrors.IsNotFound(err), fmt.Sprintf("Profile still there: %v", err)
	})
	if n := v.revokes.Load(); n != 1 {
		t.Errorf("revoked %d engines, want 1", n)
	}
}
