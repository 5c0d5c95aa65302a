package core_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

// The host finds the hand-over of upstream's finalizer in core's config.
var _ reconcilers.FinalizerHandOver = (*core.Config)(nil)

// ownerAccess polls the owner's RoleBinding until stop is closed, and counts
// the reads that found it missing.
func ownerAccess(ns string, stop <-chan struct{}) (wait func() (reads, missing int)) {
	var mu sync.Mutex
	var reads, missing int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var rb rbacv1.RoleBinding
			err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: core.OwnerRoleBinding}, &rb) //nolint:forbidigo // no *testing.T in reach
			mu.Lock()
			reads++
			if apierrors.IsNotFound(err) || rb.DeletionTimestamp != nil {
				missing++
			}
			mu.Unlock()
		}
	}()
	return func() (int, int) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return reads, missing
	}
}

// TestAdoption moves a Profile from the upstream controller to the host: the
// objects upstream made are taken over in place.
func TestAdoption(t *testing.T) {
	run := "adopt-" + rand.String(4)
	name := "adopt-" + rand.String(5)
	p := newProfile(t, name, run, "alice@example.org", func(p *kubeflowv1.Profile) {
		p.Spec.ResourceQuotaSpec = quota("cpu", "4")
	})
	before := createUpstreamShape(t, p)

	stop := make(chan struct{})
	wait := ownerAccess(name, stop)
	h := startCore(t, run, map[string]any{"adopt": true}, reconcilers.WithResync(300*time.Millisecond))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "8 objects in sync")
	// Every object carries our labels now.
	for _, o := range before {
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			u, err := getObject(t.Context(), gvkOf(t, o), nsOf(o, name), o.GetName())
			if err != nil {
				return false, err.Error()
			}
			return plugins.IsOwnedBy(u.GetLabels(), core.Kind, name), fmt.Sprintf("%T %s labels %v", o, o.GetName(), u.GetLabels())
		})
	}
	close(stop)
	reads, missing := wait()

	for _, o := range before {
		u, err := getObject(t.Context(), gvkOf(t, o), nsOf(o, name), o.GetName())
		if err != nil {
			t.Fatalf("%T %s after adoption: %v", o, o.GetName(), err)
		}
		if u.GetUID() != o.GetUID() {
			t.Errorf("%T %s was recreated: UID %s -> %s", o, o.GetName(), o.GetUID(), u.GetUID())
		}
	}
	var deletes []string
	for _, r := range h.Counter.Mutating() {
		if strings.HasPrefix(r, "DELETE") {
			deletes = append(deletes, r)
		}
	}
	if len(deletes) != 0 {
		t.Errorf("deletions during adoption: %v", deletes)
	}
	if missing != 0 || reads == 0 {
		t.Errorf("the owner's RoleBinding was missing in %d of %d reads during adoption", missing, reads)
	}
	t.Logf("adoption: %d objects kept their UIDs; owner's RoleBinding read %d times, never missing; requests: %v", len(before), reads, h.Counter.Mutating())

	t.Run("a second pass sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, core.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})
}

// nsOf returns the namespace to read o in: none for the namespace itself.
func nsOf(o client.Object, profile string) string {
	if o.GetNamespace() == "" {
		return profile
	}
	return o.GetNamespace()
}

// TestNoAdoptionByDefault leaves upstream's objects alone unless the host
// says to adopt them, and says so.
func TestNoAdoptionByDefault(t *testing.T) {
	run := "noadopt-" + rand.String(4)
	name := "noadopt-" + rand.String(5)
	p := newProfile(t, name, run, "alice@example.org", nil)
	before := createUpstreamShape(t, p)
	startCore(t, run, map[string]any{})
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "Conflict")
	if !strings.Contains(cond.Message, "adopt") {
		t.Errorf("condition %q does not say how to take the namespace over", cond.Message)
	}
	for _, o := range before {
		u, err := getObject(t.Context(), gvkOf(t, o), nsOf(o, name), o.GetName())
		if err != nil {
			t.Fatal(err)
		}
		if u.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("%T %s was written without adopt", o, o.GetName())
		}
	}
}
