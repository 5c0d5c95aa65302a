package apply_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// createEnv is the host's cache and client on a real API server, and the
// Profile and owned kind of the plugin under test.
type createEnv struct {
	*cachedServer
	profile *kubeflowv1.Profile
	owns    []schema.GroupVersionKind
}

func startCreateEnv(t *testing.T, ns string) *createEnv {
	t.Helper()
	return &createEnv{
		cachedServer: startCachedServer(t, ns, &corev1.ConfigMap{}),
		profile:      &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: "p1"}},
		owns:         []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	}
}

// applier returns the host's Applier for plugin "settings": cached reads,
// and live reads when live is true.
func (e *createEnv) applier(live bool) *apply.Applier {
	opts := []apply.Option{apply.WithScheme(e.env.Scheme)}
	if live {
		opts = append(opts, apply.WithLiveReader(e.env.Client))
	}
	return apply.New(e.client, "settings", e.profile, e.owns, opts...)
}

// A first apply costs one request: no read before it.
func TestFirstApplySendsOneRequest(t *testing.T) {
	const ns = "first"
	e := startCreateEnv(t, ns)
	ctx := t.Context()
	// A first write also looks up the kind's resource once per client:
	// that is not what is measured here.
	if _, err := e.applier(true).Apply(ctx, corev1ac.ConfigMap("warm-up", ns)); err != nil {
		t.Fatal(err)
	}
	e.counter.Reset()
	res, err := e.applier(true).Apply(ctx, corev1ac.ConfigMap("settings", ns).WithData(map[string]string{"mode": "on"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(plugins.Created) != 1 {
		t.Fatalf("Apply = %s, want 1 created", res.Summary())
	}
	if got := e.counter.Mutating(); len(got) != 1 || !strings.HasPrefix(got[0], "PATCH ") {
		t.Errorf("writes = %v, want one apply", got)
	}
	if got := e.counter.String(); got != "1 requests" {
		t.Errorf("sent %s, want 1 (the apply, no read)", got)
	}
	var cm corev1.ConfigMap
	if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["mode"] != "on" || !plugins.IsOwnedBy(cm.Labels, "settings", ns) {
		t.Errorf("created ConfigMap: data %v, labels %v", cm.Data, cm.Labels)
	}
	// The managed fields are an apply's, so a field dropped later goes.
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managed fields = %+v, want one Apply entry", cm.ManagedFields)
	}
}

// An unmanaged object of a desired name, which a cache restricted to our
// labels cannot show, is never written: not when it was there before the
// first apply (with or without a live reader), and not when it is created
// at the same moment as our first apply.
func TestFirstApplyNeverOverwritesAnUnmanagedObject(t *testing.T) {
	const ns = "race"
	e := startCreateEnv(t, ns)
	ctx := t.Context()
	theirs := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"owner": "someone"}},
			Data:       map[string]string{"mode": "theirs"},
		}
	}
	ours := func(name string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap(name, ns).WithData(map[string]string{"mode": "ours"})
	}
	// untouched checks that name holds their object as they wrote it.
	untouched := func(name string) error {
		var cm corev1.ConfigMap
		if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			return err
		}
		for _, f := range cm.ManagedFields {
			if f.Manager == plugins.FieldManagerFor("settings") {
				return fmt.Errorf("%s: our manager wrote %s", name, f.FieldsV1.Raw)
			}
		}
		if cm.Data["mode"] != "theirs" || len(cm.Labels) != 1 {
			return fmt.Errorf("%s: data %v, labels %v; want theirs unchanged", name, cm.Data, cm.Labels)
		}
		return nil
	}
	skipped := func(res plugins.Result, err error) error {
		if res.Count(plugins.Skipped) != 1 || plugins.ReasonOf(err, "") != plugins.ReasonConflict {
			return fmt.Errorf("got %s, %v; want 1 skipped with a Conflict", res.Summary(), err)
		}
		return nil
	}

	for _, live := range []bool{true, false} {
		name := fmt.Sprintf("before-live-%t", live)
		if err := e.env.Client.Create(ctx, theirs(name)); err != nil {
			t.Fatal(err)
		}
		res, err := e.applier(live).Sync(ctx, ours(name))
		if err := errors.Join(skipped(res, err), untouched(name)); err != nil {
			t.Errorf("existing object, live reader %t: %v", live, err)
		}
	}

	// Both writers start together, many times over: whichever wins, the
	// other must not have written.
	const rounds = 60
	var won, lost int
	for i := range rounds {
		name := fmt.Sprintf("race-%d", i)
		var (
			wg        sync.WaitGroup
			start     = make(chan struct{})
			createErr error
			res       plugins.Result
			syncErr   error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			createErr = e.env.Client.Create(ctx, theirs(name))
		}()
		go func() {
			defer wg.Done()
			<-start
			// Apply, not Sync: a Sync would prune the earlier rounds' objects.
			res, syncErr = e.applier(i%2 == 0).Apply(ctx, ours(name))
		}()
		close(start)
		wg.Wait()
		switch {
		case createErr == nil:
			lost++
			if err := errors.Join(skipped(res, syncErr), untouched(name)); err != nil {
				t.Errorf("round %d, their create won: %v", i, err)
			}
		case apierrors.IsAlreadyExists(createErr):
			won++
			if syncErr != nil || res.Count(plugins.Created) != 1 {
				t.Errorf("round %d, our apply won: Apply = %s, %v", i, res.Summary(), syncErr)
			}
		default:
			t.Fatalf("round %d: their create: %v", i, createErr)
		}
	}
	t.Logf("%d rounds: our apply first %d times, their create first %d times", rounds, won, lost)
}
