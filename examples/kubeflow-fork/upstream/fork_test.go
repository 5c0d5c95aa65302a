package upstream_test

import (
	"testing"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream"
	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream/profilev1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{ControllerManager: true, Istio: true})
}

// TestForkDrivesPlugins runs quotas and limitrange through the fork's
// profilekit plugins the way the upstream controller runs its own plugins,
// against the real API server, without a manager: with nothing set up, the
// plugins still apply and revoke.
func TestForkDrivesPlugins(t *testing.T) {
	ctx := t.Context()
	name := "fork-team"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	ours := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{
			{TypeMeta: metav1.TypeMeta{Kind: quotas.Kind, APIVersion: "kubeflow.org/v1alpha1"}, Spec: &runtime.RawExtension{Raw: []byte(`{"hard":{"limits.cpu":"4"}}`)}},
			{TypeMeta: metav1.TypeMeta{Kind: limitrange.Kind}, Spec: &runtime.RawExtension{Raw: []byte(`{"container":{"max":{"cpu":"2"}}}`)}},
			{TypeMeta: metav1.TypeMeta{Kind: "NotBuiltIn"}, Spec: &runtime.RawExtension{Raw: []byte(`{"x":"y"}`)}},
		}},
	}
	if err := env.Client.Create(ctx, ours); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteProfile(t, name) })

	// The fork's own client, scheme and Profile type.
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = profilev1.AddToScheme(scheme)
	counter := &testenv.Counter{}
	c, err := client.New(counter.Counting(env.Config), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	r := &upstream.ProfileReconciler{Client: c, Scheme: scheme, Log: testr.New(t)}
	if r.Profilekit, err = r.NewProfilekit(); err != nil {
		t.Fatal(err)
	}
	var profile profilev1.Profile
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &profile); err != nil {
		t.Fatal(err)
	}
	ps, err := r.GetPluginSpec(&profile)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0] != r.Profilekit {
		t.Fatalf("GetPluginSpec returned %v, want the profilekit plugins alone", ps)
	}

	for _, p := range ps {
		if err := p.ApplyPlugin(r, &profile); err != nil {
			t.Fatalf("ApplyPlugin: %v", err)
		}
	}
	var rq corev1.ResourceQuota
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: quotas.DefaultName}, &rq); err != nil {
		t.Fatalf("quota: %v", err)
	}
	if got := rq.Spec.Hard["limits.cpu"]; got.String() != "4" {
		t.Errorf("quota limits.cpu = %s, want 4", got.String())
	}
	var lr corev1.LimitRange
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: limitrange.DefaultName}, &lr); err != nil {
		t.Fatalf("limit range: %v", err)
	}
	for _, obj := range []client.Object{&rq, &lr} {
		if !plugins.IsOwnedBy(obj.GetLabels(), obj.GetLabels()[plugins.LabelPlugin], name) {
			t.Errorf("%s %s lacks the ownership labels: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), obj.GetLabels())
		}
		if refs := obj.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != profile.UID {
			t.Errorf("%s owner references = %+v, want the Profile %s", obj.GetName(), refs, profile.UID)
		}
	}

	counter.Reset()
	for _, p := range ps {
		if err := p.ApplyPlugin(r, &profile); err != nil {
			t.Fatalf("second ApplyPlugin: %v", err)
		}
	}
	if got := counter.Mutating(); len(got) != 0 {
		t.Errorf("second ApplyPlugin sent mutating requests %v, want none", got)
	}

	for _, p := range ps {
		if err := p.RevokePlugin(r, &profile); err != nil {
			t.Fatalf("RevokePlugin: %v", err)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&rq), &rq); !apierrors.IsNotFound(err) {
		t.Errorf("quota after RevokePlugin: %v, want NotFound", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&lr), &lr); !apierrors.IsNotFound(err) {
		t.Errorf("limit range after RevokePlugin: %v, want NotFound", err)
	}
}

// TestForkRejectsBadSpec shows that a mistyped spec reaches the fork as an
// error naming the plugin and the field, and writes nothing.
func TestForkRejectsBadSpec(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = profilev1.AddToScheme(scheme)
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	r := &upstream.ProfileReconciler{Client: c, Scheme: scheme, Log: testr.New(t)}
	if r.Profilekit, err = r.NewProfilekit(); err != nil {
		t.Fatal(err)
	}
	profile := &profilev1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "fork-bad", UID: "0000"},
		Spec: profilev1.ProfileSpec{Plugins: []profilev1.Plugin{
			{TypeMeta: metav1.TypeMeta{Kind: quotas.Kind}, Spec: &runtime.RawExtension{Raw: []byte(`{"hard":{"limits.cpu":"4"},"hrad":{}}`)}},
		}},
	}
	ps, err := r.GetPluginSpec(profile)
	if err != nil {
		t.Fatal(err)
	}
	err = ps[0].ApplyPlugin(r, profile)
	if err == nil || err.Error() != `spec.plugins[0] (quotas).spec: unknown field "hrad"` {
		t.Errorf("ApplyPlugin error = %v, want the unknown field named", err)
	}
}
