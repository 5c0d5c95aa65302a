package volumes_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// claimsUnseen is the volumes plugin with passes whose client, while hide
// is set, shows no claims: a cache that has not yet seen them; and, while
// liveDown is also set, whose reads of claims from the API server fail.
type claimsUnseen struct {
	plugins.Plugin
	hide, liveDown *atomic.Bool
}

func (c claimsUnseen) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	if c.hide.Load() {
		req.Client = noClaims{req.Client}
		if c.liveDown.Load() {
			req.Live = claimsDown{req.LiveReader()}
		}
	}
	return c.Plugin.Apply(ctx, req)
}

// claimsDown is a reader whose reads of claims fail: the API server out of
// reach for them.
type claimsDown struct{ client.Reader }

func (d claimsDown) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		return errors.New("the API server did not answer (injected)")
	}
	return d.Reader.Get(ctx, key, obj, opts...)
}

type noClaims struct{ plugins.Cluster }

func (n noClaims) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.PersistentVolumeClaimList); ok {
		return nil
	}
	return n.Cluster.List(ctx, list, opts...)
}

func (n noClaims) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		return apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), key.Name)
	}
	return n.Cluster.Get(ctx, key, obj, opts...)
}

// A pass whose cache does not show the Profile's claim (made a moment
// before, or a cache catching up) while it shows the volume bound to it
// must leave the binding alone: clearing the uid in the volume's claimRef,
// as for a volume retained from an earlier claim, leaves the claim Lost.
// When the API server does not answer the pass's read of the claim either,
// the pass fails on its condition and still leaves the binding alone.
func TestBoundVolumeIsLeftWhileItsClaimIsUnseen(t *testing.T) {
	for _, c := range []struct {
		reason   string
		liveDown bool
	}{
		{"the claim read from the API server", false},
		{"the API server does not answer the claim's read", true},
	} {
		t.Run(c.reason, func(t *testing.T) {
			ctx := t.Context()
			run := "unseen-" + rand.String(4)
			name := "unseen-" + rand.String(5)
			def := volumes.Definition()
			hide, liveDown := &atomic.Bool{}, &atomic.Bool{}
			liveDown.Store(c.liveDown)
			def.Plugin = claimsUnseen{Plugin: def.Plugin, hide: hide, liveDown: liveDown}
			startHostOf(t, def, run, hostConfig(storageClass(t, false)))
			newProfile(t, name, run, "alice@example.org", nil)
			provision(t, name, "workspace")
			pvc, pv := waitBound(t, name, "workspace")
			waitVolume(t, pv.Name, 20*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
				return pv.Labels[volumes.LabelTemplate] == "home", fmt.Sprintf("labels %v", pv.Labels)
			})

			hide.Store(true) // the host resyncs every 300 ms
			if c.liveDown {
				testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "did not answer")
			}
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				var now corev1.PersistentVolume
				if err := env.Client.Get(ctx, client.ObjectKey{Name: pv.Name}, &now); err != nil {
					t.Fatal(err)
				}
				if ref := now.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID {
					t.Fatalf("the bound volume's claimRef became %+v; want it still bound to claim uid %s", ref, pvc.UID)
				}
				time.Sleep(100 * time.Millisecond)
			}
			var claim corev1.PersistentVolumeClaim
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), &claim); err != nil {
				t.Fatal(err)
			}
			if claim.Status.Phase != corev1.ClaimBound || claim.UID != pvc.UID {
				t.Errorf("claim is %s (uid %s, was %s); want it still Bound", claim.Status.Phase, claim.UID, pvc.UID)
			}
		})
	}
}
