package plugins_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// writeLog records the writes a client sends: when each starts and ends,
// and how many were under way at most. A namespaced write is held until
// hold of them are under way, or a second has passed, so that writes sent
// one after another show as one at a time.
type writeLog struct {
	hold int

	mu       sync.Mutex
	events   []string
	inFlight int
	most     int
	arrived  int
	all      chan struct{}
}

func (l *writeLog) note(event string, delta int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event)
	l.inFlight += delta
	l.most = max(l.most, l.inFlight)
}

func (l *writeLog) patch(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	name := obj.GetObjectKind().GroupVersionKind().Kind + " " + obj.GetName()
	l.note("start "+name, 1)
	if obj.GetNamespace() != "" {
		l.mu.Lock()
		if l.arrived++; l.arrived == l.hold {
			close(l.all)
		}
		l.mu.Unlock()
		select {
		case <-l.all:
		case <-time.After(time.Second):
		}
	}
	err := c.Patch(ctx, obj, patch, opts...)
	l.note("end "+name, -1)
	return err
}

// A pass writes the Profile's namespace first, alone, and then the objects
// that go into it at once, so that it waits for about one round trip to
// the API server rather than one per object.
func TestPassWritesNamespacedObjectsAtOnce(t *testing.T) {
	e := startCreateEnv(t, "parallel-base")
	ctx := t.Context()
	const n = 5
	profile := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "parallel", UID: "p2"}}
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Namespace"), corev1.SchemeGroupVersion.WithKind("ConfigMap")}
	desired := []runtime.ApplyConfiguration{corev1ac.Namespace(profile.Name)}
	for i := range n {
		desired = append(desired, corev1ac.ConfigMap(fmt.Sprintf("cm-%d", i), profile.Name).WithData(map[string]string{"i": fmt.Sprint(i)}))
	}
	base, err := client.NewWithWatch(e.env.Config, client.Options{Scheme: e.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	log := &writeLog{hold: n, all: make(chan struct{})}
	c := interceptor.NewClient(base, interceptor.Funcs{Patch: log.patch})

	res, err := plugins.NewApplier(c, "core", profile, owns, plugins.WithScheme(e.env.Scheme), plugins.WithUpstreamObjects()).Sync(ctx, desired...)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Count(plugins.Created); got != n+1 {
		t.Errorf("Sync = %s, want %d created", res.Summary(), n+1)
	}
	t.Logf("writes: %v", log.events)
	if log.most != n {
		t.Errorf("at most %d writes under way at once, want the %d ConfigMaps together", log.most, n)
	}
	nsEnd := slices.Index(log.events, "end Namespace parallel")
	firstNamespaced := slices.IndexFunc(log.events, func(ev string) bool { return ev != "start Namespace parallel" && ev[:6] == "start " })
	if nsEnd < 0 || firstNamespaced < nsEnd {
		t.Errorf("a ConfigMap was sent before the namespace was written: %v", log.events)
	}
	var cms corev1.ConfigMapList
	if err := e.env.Client.List(ctx, &cms, client.InNamespace(profile.Name)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range cms.Items {
		if cm.Data["i"] != "" {
			names = append(names, cm.Name)
		}
	}
	if len(names) != n {
		t.Errorf("ConfigMaps in %s: %v, want %d", profile.Name, names, n)
	}
}
