package apply_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// A typed read that comes back without its kind (as uncached reads do) must
// still be recognised as unchanged.
func TestSyncUnchangedWhenReadsLoseTheKind(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")}
	want := corev1ac.ConfigMap("settings", "team").WithData(map[string]string{"a": "b"})

	// The fake client's apply stores the object; the interceptor then strips
	// the kind from every typed read.
	base := fake.NewClientBuilder().WithScheme(s).Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if _, typed := obj.(*corev1.ConfigMap); typed {
				obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			}
			return err
		},
	})
	first, err := apply.New(c, "settings", p, owns, apply.WithScheme(s)).Sync(t.Context(), want)
	if err != nil {
		t.Fatal(err)
	}
	if first.Count(plugins.Created) != 1 {
		t.Fatalf("first Sync = %s, want 1 created", first.Summary())
	}
	second, err := apply.New(c, "settings", p, owns, apply.WithScheme(s)).Sync(t.Context(), want)
	if err != nil {
		t.Fatal(err)
	}
	if second.Count(plugins.Unchanged) != 1 {
		t.Errorf("second Sync = %s, want 1 unchanged", second.Summary())
	}
}

// Objects stay in the Profile's namespace unless the plugin may write
// elsewhere, and pruning looks only where the plugin may write.
func TestSyncNamespaceScope(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")}
	elsewhere := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: "shared", Labels: plugins.OwnershipLabels("settings", "team")}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(elsewhere).Build()

	_, err := apply.New(c, "settings", p, owns).Sync(t.Context(), corev1ac.ConfigMap("x", "shared"))
	if err == nil || !strings.Contains(err.Error(), `ConfigMap shared/x is outside the Profile's namespace team`) {
		t.Errorf("Sync into another namespace: error %v, want it refused", err)
	}
	res, err := apply.New(c, "settings", p, owns).Sync(t.Context())
	if err != nil || res.Count(plugins.Deleted) != 0 {
		t.Errorf("Sync within the namespace = %s, %v; want the object in another namespace left alone", res.Summary(), err)
	}
	res, err = apply.New(c, "settings", p, owns, apply.WithAnyNamespace()).Sync(t.Context())
	if err != nil || res.Count(plugins.Deleted) != 1 {
		t.Errorf("Sync in any namespace = %s, %v; want the stale object in another namespace deleted", res.Summary(), err)
	}
}

// Only an Applier with WithUpstreamObjects writes the Profile's namespace and
// upstream's names, and it still writes nothing outside the namespace; only
// Adopting takes over objects nobody labelled.
func TestSyncUpstreamObjects(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Namespace"), corev1.SchemeGroupVersion.WithKind("ServiceAccount")}
	theirs := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default-editor", Namespace: "team"}}
	helm := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default-viewer", Namespace: "team", Labels: map[string]string{plugins.LabelManagedBy: "Helm"}}}
	newClient := func() client.Client {
		return fake.NewClientBuilder().WithScheme(s).WithObjects(theirs.DeepCopy(), helm.DeepCopy()).Build()
	}
	ns := corev1ac.Namespace("team")

	for _, tt := range []struct {
		reason  string
		opts    []apply.Option
		adopt   bool
		may     func(client.Object) error
		desired []runtime.ApplyConfiguration
		wantErr string
		want    string
	}{
		{reason: "another plugin may not write the namespace", desired: []runtime.ApplyConfiguration{ns}, wantErr: "the namespace team is the core plugin's"},
		{reason: "another plugin may not write upstream's names", desired: []runtime.ApplyConfiguration{corev1ac.ServiceAccount("default-editor", "team")}, wantErr: "is the upstream controller's"},
		{reason: "core writes the namespace", opts: []apply.Option{apply.WithUpstreamObjects()}, desired: []runtime.ApplyConfiguration{ns}, want: "1 created"},
		{reason: "core writes no other namespace", opts: []apply.Option{apply.WithUpstreamObjects()}, desired: []runtime.ApplyConfiguration{corev1ac.Namespace("other")}, wantErr: "outside the Profile's namespace team"},
		{reason: "core does not take upstream's object without adoption", opts: []apply.Option{apply.WithUpstreamObjects()}, desired: []runtime.ApplyConfiguration{corev1ac.ServiceAccount("default-editor", "team")}, wantErr: "exists and is not managed"},
		{reason: "core adopts upstream's object", opts: []apply.Option{apply.WithUpstreamObjects()}, adopt: true, desired: []runtime.ApplyConfiguration{corev1ac.ServiceAccount("default-editor", "team")}, want: "1 configured"},
		{reason: "core adopts only what its rule allows", opts: []apply.Option{apply.WithUpstreamObjects()}, adopt: true,
			may:     func(client.Object) error { return plugins.Terminalf(plugins.ReasonConflict, "refused by the caller") },
			desired: []runtime.ApplyConfiguration{corev1ac.ServiceAccount("default-editor", "team")}, wantErr: "refused by the caller"},
		{reason: "core never adopts another tool's object", opts: []apply.Option{apply.WithUpstreamObjects()}, adopt: true, desired: []runtime.ApplyConfiguration{corev1ac.ServiceAccount("default-viewer", "team")}, wantErr: "exists and is not managed"},
		{reason: "adopting means nothing without upstream objects", adopt: true, desired: []runtime.ApplyConfiguration{corev1ac.ServiceAccount("x", "team")}, want: "1 created"},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			var a plugins.Objects = apply.New(newClient(), "core", p, owns, tt.opts...)
			if tt.adopt {
				a = a.(*apply.Applier).Adopting(tt.may, nil)
			}
			res, err := a.Sync(t.Context(), tt.desired...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Sync = %s, %v; want an error containing %q", res.Summary(), err, tt.wantErr)
				}
				return
			}
			if err != nil || res.Summary() != tt.want {
				t.Errorf("Sync = %s, %v; want %s", res.Summary(), err, tt.want)
			}
		})
	}
}

// The applied hash leaves out the Profile's name and UID, so that objects
// rendered alike for many Profiles carry one value, and still changes with
// any other content.
func TestAppliedHashLeavesOutTheProfile(t *testing.T) {
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")}
	hash := func(profile, uid, value string) string {
		t.Helper()
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: profile, UID: types.UID(uid)}}
		rec := apply.NewRecorder("settings", p, owns)
		want := corev1ac.ConfigMap("settings", profile).WithData(map[string]string{"owner": profile, "mode": value})
		if _, err := rec.Sync(t.Context(), want); err != nil {
			t.Fatal(err)
		}
		objs := rec.Recorded()
		if len(objs) != 1 {
			t.Fatalf("recorded %d objects, want 1", len(objs))
		}
		return objs[0].GetAnnotations()[plugins.AnnotationAppliedHash]
	}
	a, b := hash("team-a", "uid-a", "strict"), hash("team-b", "uid-b", "strict")
	if a == "" || a != b {
		t.Errorf("the same template for two Profiles hashes to %q and %q, want one value", a, b)
	}
	if c := hash("team-a", "uid-a", "open"); c == a {
		t.Errorf("a changed value kept the hash %q", a)
	}
	// The Profile's name in a value of its own is part of the template; the
	// same letters written for another Profile are not.
	if d := hash("team-b", "uid-b", "team-a"); d == hash("team-a", "uid-a", "team-a") {
		t.Errorf("team-b's object naming team-a hashes as team-a's naming itself (%q)", d)
	}
}

// A pass sends its cluster-scoped objects first, one after another, then its
// namespaced objects at once, and reports them in their stable order (the
// cluster-scoped first, then by namespace, kind and name).
func TestApplySendsNamespacedObjectsTogether(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}
	owns := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Namespace"), corev1.SchemeGroupVersion.WithKind("ConfigMap")}
	const maps = 5
	var mu sync.Mutex
	var namespaceDone bool
	var early []string
	inFlight, most := 0, 0
	together := make(chan struct{})
	base := fake.NewClientBuilder().WithScheme(s).Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if obj.GetNamespace() == "" {
				err := c.Patch(ctx, obj, patch, opts...)
				mu.Lock()
				namespaceDone = true
				mu.Unlock()
				return err
			}
			mu.Lock()
			if !namespaceDone {
				early = append(early, obj.GetName())
			}
			inFlight++
			most = max(most, inFlight)
			if inFlight == maps {
				close(together)
			}
			mu.Unlock()
			select {
			case <-together:
			case <-time.After(5 * time.Second):
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	var desired []runtime.ApplyConfiguration
	for i := maps; i > 0; i-- {
		desired = append(desired, corev1ac.ConfigMap(fmt.Sprintf("settings-%d", i), "team").WithData(map[string]string{"n": fmt.Sprint(i)}))
	}
	desired = append(desired, corev1ac.Namespace("team-shared"))
	res, err := apply.New(c, "settings", p, owns, apply.WithScheme(s), apply.WithAnyNamespace()).Apply(t.Context(), desired...)
	if err != nil {
		t.Fatal(err)
	}
	if len(early) > 0 {
		t.Errorf("namespaced objects %v were sent before the cluster-scoped one was answered", early)
	}
	if most != maps {
		t.Errorf("at most %d namespaced objects were in flight at once, want all %d", most, maps)
	}
	var got []string
	for _, ch := range res.Changes {
		got = append(got, ch.Kind+" "+ch.Namespace+"/"+ch.Name+" "+string(ch.Action))
	}
	want := []string{"Namespace /team-shared created", "ConfigMap team/settings-1 created", "ConfigMap team/settings-2 created",
		"ConfigMap team/settings-3 created", "ConfigMap team/settings-4 created", "ConfigMap team/settings-5 created"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
