package namespacemeta_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/namespacemeta"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const (
	condType = "NamespacemetaReady"
	owner    = "owner@example.org"
)

// hostDefaults is the host's section: the doc's allowlist and a labels file
// that names example.org/billing.
func hostDefaults(t *testing.T) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "namespace-labels.yaml")
	if err := os.WriteFile(file, []byte("example.org/billing: platform\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"allow": hostAllow, "namespaceLabelsPath": file})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spec is the plugin's spec.plugins entry for labels and annotations.
func spec(t *testing.T, labels, annotations map[string]string) kubeflowv1.Plugin {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"labels": labels, "annotations": annotations})
	if err != nil {
		t.Fatal(err)
	}
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: namespacemeta.Kind}, Spec: &runtime.RawExtension{Raw: raw}}
}

// newNamespace makes a namespace of the owner's, with a label and an
// annotation set by hand, and returns its name.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	name := prefix + "-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{"team.example.org/note": "by-hand"},
		Annotations: map[string]string{"owner": owner, "team.example.org/contact": "alice"},
	}}
	if err := env.Client.Create(t.Context(), ns, client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), ns) })
	return name
}

// passes runs the plugin's passes for a Profile as a host does, through a
// client that counts its requests.
type passes struct {
	t        *testing.T
	defaults []byte
	counter  *testenv.Counter
	client   client.Client
	profile  *kubeflowv1.Profile
}

func newPasses(t *testing.T, name string, defaults []byte) *passes {
	t.Helper()
	counter := &testenv.Counter{}
	c, err := client.New(counter.Counting(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: owner}},
	}
	return &passes{t: t, defaults: defaults, counter: counter, client: c, profile: p}
}

// apply lists the plugin with labels and annotations and runs Apply.
func (h *passes) apply(labels, annotations map[string]string) (plugins.Result, error) {
	h.t.Helper()
	h.profile.Spec.Plugins = []kubeflowv1.Plugin{spec(h.t, labels, annotations)}
	def := namespacemeta.Definition()
	cfg, err := def.Decode(h.defaults, h.profile)
	if err != nil {
		return plugins.Result{}, err
	}
	return def.Plugin.Apply(h.t.Context(), h.request(cfg))
}

// revoke drops the plugin from the Profile and runs Revoke.
func (h *passes) revoke() (plugins.Result, error) {
	h.t.Helper()
	h.profile.Spec.Plugins = nil
	def := namespacemeta.Definition()
	cfg, err := def.DecodeHostDefaults(h.defaults)
	if err != nil {
		return plugins.Result{}, err
	}
	return def.Plugin.Revoke(h.t.Context(), h.request(cfg))
}

func (h *passes) request(cfg any) plugins.Request {
	return plugins.Request{
		Profile: h.profile,
		Config:  cfg,
		Client:  h.client,
		Objects: apply.New(h.client, namespacemeta.Kind, h.profile, nil),
		Live:    h.client,
	}
}

// meta is a namespace's labels and annotations, and the keys the plugin's
// field manager holds there.
type meta struct {
	Labels, Annotations map[string]string
	Ours                []string
	ResourceVersion     string
}

func namespaceMeta(t *testing.T, name string) meta {
	t.Helper()
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
		t.Fatal(err)
	}
	return meta{Labels: ns.Labels, Annotations: ns.Annotations, Ours: ourKeys(t, &ns), ResourceVersion: ns.ResourceVersion}
}

// ourKeys lists the keys the plugin's field manager holds on obj, with the
// operation that set them: "Apply label istio.io/rev".
func ourKeys(t *testing.T, obj metav1.Object) []string {
	t.Helper()
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != plugins.FieldManagerFor(namespacemeta.Kind) || mf.FieldsV1 == nil {
			continue
		}
		var set struct {
			Metadata struct {
				Labels      map[string]any `json:"f:labels"`
				Annotations map[string]any `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &set); err != nil {
			t.Fatal(err)
		}
		for what, keys := range map[string]map[string]any{"label": set.Metadata.Labels, "annotation": set.Metadata.Annotations} {
			for k := range keys {
				out = append(out, fmt.Sprintf("%s %s %s", mf.Operation, what, strings.TrimPrefix(k, "f:")))
			}
		}
	}
	slices.Sort(out)
	return out
}

// with returns m with kv (key, value pairs) added.
func with(m map[string]string, kv ...string) map[string]string {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func TestAllowedKeysLandOnTheNamespace(t *testing.T) {
	name := newNamespace(t, "land")
	before := namespaceMeta(t, name)
	h := newPasses(t, name, hostDefaults(t))
	labels := map[string]string{"istio.io/rev": "canary", "pod-security.kubernetes.io/enforce": "restricted", "example.org/cost-centre": "cc-1234"}
	annotations := map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=team-a"}
	res, err := h.apply(labels, annotations)
	if err != nil || res.Count(plugins.Configured) != 1 {
		t.Fatalf("Apply = %+v, %v; want the namespace configured", res, err)
	}
	got := namespaceMeta(t, name)
	want := meta{
		Labels:      with(before.Labels, "istio.io/rev", "canary", "pod-security.kubernetes.io/enforce", "restricted", "example.org/cost-centre", "cc-1234"),
		Annotations: with(before.Annotations, "scheduler.alpha.kubernetes.io/node-selector", "pool=team-a"),
		Ours: []string{
			"Apply annotation scheduler.alpha.kubernetes.io/node-selector",
			"Apply label example.org/cost-centre", "Apply label istio.io/rev", "Apply label pod-security.kubernetes.io/enforce",
		},
	}
	got.ResourceVersion = ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("namespace (-want +got):\n%s", diff)
	}

	h.counter.Reset()
	res, err = h.apply(labels, annotations)
	if err != nil || res.Count(plugins.Unchanged) != 1 {
		t.Errorf("second Apply = %+v, %v; want unchanged", res, err)
	}
	if m := h.counter.Mutating(); len(m) != 0 {
		t.Errorf("second Apply sent %v, want nothing", m)
	}
}

func TestRemovingAKeyRemovesItFromTheNamespace(t *testing.T) {
	name := newNamespace(t, "remove")
	before := namespaceMeta(t, name)
	h := newPasses(t, name, hostDefaults(t))
	if _, err := h.apply(map[string]string{"istio.io/rev": "canary", "example.org/cost-centre": "cc-1"}, map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=a"}); err != nil {
		t.Fatal(err)
	}
	res, err := h.apply(map[string]string{"istio.io/rev": "canary"}, nil)
	if err != nil || res.Count(plugins.Configured) != 1 {
		t.Fatalf("Apply without two keys = %+v, %v; want configured", res, err)
	}
	got := namespaceMeta(t, name)
	if diff := cmp.Diff(with(before.Labels, "istio.io/rev", "canary"), got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before.Annotations, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// A key set by another writer stays when the plugin lets go: one the plugin
// never set, and one of its keys that another manager applied too.
func TestRevokeRemovesOnlyOurKeys(t *testing.T) {
	name := newNamespace(t, "revoke")
	h := newPasses(t, name, hostDefaults(t))
	if _, err := h.apply(map[string]string{"istio.io/rev": "canary", "example.org/cost-centre": "cc-1"}, map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=a"}); err != nil {
		t.Fatal(err)
	}
	// A hand edit after the plugin's apply, and another tool that applies
	// one of the plugin's keys with the same value.
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["team.example.org/edited"] = "later"
	if err := env.Client.Update(t.Context(), &ns, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	shared := corev1ac.Namespace(name).WithLabels(map[string]string{"istio.io/rev": "canary"})
	if err := env.Client.Apply(t.Context(), shared, client.FieldOwner("mesh-operator")); err != nil {
		t.Fatal(err)
	}
	before := namespaceMeta(t, name)

	res, err := h.revoke()
	if err != nil || res.Count(plugins.Configured) != 1 {
		t.Fatalf("Revoke = %+v, %v; want the namespace configured", res, err)
	}
	got := namespaceMeta(t, name)
	wantLabels := maps.Clone(before.Labels)
	delete(wantLabels, "example.org/cost-centre")
	wantAnnotations := maps.Clone(before.Annotations)
	delete(wantAnnotations, "scheduler.alpha.kubernetes.io/node-selector")
	if diff := cmp.Diff(meta{Labels: wantLabels, Annotations: wantAnnotations}, meta{Labels: got.Labels, Annotations: got.Annotations, Ours: got.Ours}); diff != "" {
		t.Errorf("namespace after Revoke (-want +got):\n%s", diff)
	}
	if got.Labels["team.example.org/edited"] != "later" || got.Labels["istio.io/rev"] != "canary" {
		t.Errorf("labels %v: the hand edit and the key another tool applied must stay", got.Labels)
	}

	h.counter.Reset()
	if res, err := h.revoke(); err != nil || res.Count(plugins.Configured) != 0 || len(h.counter.Mutating()) != 0 {
		t.Errorf("second Revoke = %+v, %v, requests %v; want nothing", res, err, h.counter.Mutating())
	}
}

// A refused key refuses the pass: the namespace keeps every key it had, the
// plugin's one that the new spec drops included, and nothing is sent.
func TestRefusedKeyLeavesTheNamespaceAsItWas(t *testing.T) {
	name := newNamespace(t, "refuse")
	h := newPasses(t, name, hostDefaults(t))
	if _, err := h.apply(map[string]string{"istio.io/rev": "canary", "example.org/cost-centre": "cc-1"}, nil); err != nil {
		t.Fatal(err)
	}
	before := namespaceMeta(t, name)
	h.counter.Reset()
	_, err := h.apply(map[string]string{"istio.io/rev": "stable", "kubernetes.io/metadata.name": "kube-system"}, map[string]string{"owner": "mallory@example.org"})
	if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
		t.Fatalf("Apply = %v, want a terminal InvalidSpec", err)
	}
	for _, key := range []string{"labels[kubernetes.io/metadata.name]", "annotations[owner]"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
	if diff := cmp.Diff(before, namespaceMeta(t, name)); diff != "" {
		t.Errorf("namespace (-before +after):\n%s", diff)
	}
	if m := h.counter.Mutating(); len(m) != 0 {
		t.Errorf("a refused pass sent %v", m)
	}
}

// A namespace that does not exist yet is retried, and none is made.
func TestMissingNamespaceIsRetried(t *testing.T) {
	name := "missing-" + rand.String(5)
	h := newPasses(t, name, hostDefaults(t))
	_, err := h.apply(map[string]string{"istio.io/rev": "canary"}, nil)
	var missing *plugins.ForeignMissingError
	if !errors.As(err, &missing) || plugins.IsTerminal(err) {
		t.Fatalf("Apply = %v, want a retried ForeignMissingError", err)
	}
	if m := h.counter.Mutating(); len(m) != 0 {
		t.Errorf("Apply sent %v for a missing namespace", m)
	}
	if res, err := h.revoke(); err != nil || len(res.Changes) != 0 {
		t.Errorf("Revoke of a missing namespace = %+v, %v; want done", res, err)
	}
}
